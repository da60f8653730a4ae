"""distprivacy: release dataset statistics while protecting global properties with
(ε, δ)-distribution privacy (Chen & Ohrimenko 2023; Kawamoto & Murakami 2019)."""

from distprivacy.exceptions import (
    DataUnavailableError,
    DistPrivacyError,
    ExactReleaseError,
    NotApplicableError,
    ResourceLimitError,
)

__version__ = "0.1.0"

__all__ = [
    "DataUnavailableError",
    "DistPrivacyError",
    "ExactReleaseError",
    "NotApplicableError",
    "ResourceLimitError",
    "__version__",
]
