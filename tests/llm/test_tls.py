"""SDK clients load TLS certificates only for servers that use TLS."""

from __future__ import annotations

import ssl

from judge.llm.providers.clients import shared_ssl_context, tls_verify


def test_plain_http_servers_get_no_tls_context() -> None:
    assert tls_verify("http://127.0.0.1:8080/v1") is False
    assert tls_verify("HTTP://localhost/v1") is False


def test_tls_servers_and_the_default_endpoint_verify_certificates() -> None:
    for url in ("https://api.example.test/v1", None):
        context = tls_verify(url)
        assert isinstance(context, ssl.SSLContext) and context is shared_ssl_context()
        assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
