"""A browser-less client of the service's web pages for the tests: cookies kept, CSRF tokens
read from the forms (standard library only)."""

from __future__ import annotations

import http.client
import re
import urllib.parse
import uuid
from typing import Any

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


class Pages:
    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", int(parts.port or 80)
        self.cookies: dict[str, str] = {}
        self.csrf = ""

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, str, dict[str, str]]:
        con = http.client.HTTPConnection(self.host, self.port, timeout=120)
        h = dict(headers or {})
        if self.cookies:
            h["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        con.request(method, path, body=body, headers=h)
        resp = con.getresponse()
        text = resp.read().decode("utf-8", "replace")
        for k, v in resp.getheaders():
            if k.lower() == "set-cookie":
                name, _, rest = v.partition("=")
                value = rest.split(";", 1)[0].strip('"')
                if "max-age=0" in v.lower() or "expires=thu, 01 jan 1970" in v.lower():
                    self.cookies.pop(name, None)
                else:
                    self.cookies[name] = value
        hdrs: dict[str, str] = {}
        for k, v in resp.getheaders():
            hdrs[k.lower()] = f"{hdrs[k.lower()]}\n{v}" if k.lower() in hdrs else v
        con.close()
        m = _CSRF.search(text)
        if m:
            self.csrf = m.group(1)
        return resp.status, text, hdrs

    def get(self, path: str) -> tuple[int, str, dict[str, str]]:
        return self.request("GET", path)

    def post(
        self,
        path: str,
        fields: dict[str, Any],
        csrf: bool = True,
        files: dict[str, tuple[str, bytes]] | None = None,
    ) -> tuple[int, str, dict[str, str]]:
        data = dict(fields)
        if csrf:
            data.setdefault("csrf", self.csrf)
        if files:
            boundary = uuid.uuid4().hex
            parts = []
            for k, v in data.items():
                for item in v if isinstance(v, list) else [v]:
                    parts.append(
                        f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"'
                        f"\r\n\r\n{item}\r\n".encode()
                    )
            for k, (fname, content) in files.items():
                parts.append(
                    f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"; '
                    f'filename="{fname}"\r\nContent-Type: text/csv\r\n\r\n'.encode()
                    + content
                    + b"\r\n"
                )
            body = b"".join(parts) + f"--{boundary}--\r\n".encode()
            ctype = f"multipart/form-data; boundary={boundary}"
        else:
            body = urllib.parse.urlencode(data, doseq=True).encode()
            ctype = "application/x-www-form-urlencoded"
        return self.request("POST", path, body, {"Content-Type": ctype})

    def login(self, token: str) -> int:
        self.get("/login")
        status, _, hdrs = self.post("/login", {"token": token})
        if status == 303:
            self.get(hdrs["location"])
        return status
