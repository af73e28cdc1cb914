"""Signing keys generated in the test, their public JWKs, and tokens (good and hostile) made with them."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

ISSUER = "https://issuer.example.test/pool"
AUDIENCE = "https://cairn.example.test/mcp"
NOW = 1_800_000_000.0
"""The verifier's fake wall clock; tokens are dated relative to it."""


@dataclass
class SigningKey:
    kid: str
    alg: str
    private: Any

    def jwk(self, *, with_alg: bool = True, **extra: Any) -> dict[str, Any]:
        public = self.private.public_key()
        to_jwk = RSAAlgorithm.to_jwk if isinstance(public, rsa.RSAPublicKey) else ECAlgorithm.to_jwk
        out: dict[str, Any] = {**to_jwk(public, as_dict=True), "kid": self.kid, "use": "sig"}
        if with_alg:
            out["alg"] = self.alg
        return {**out, **extra}

    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def sign(self, claims: dict[str, Any], *, alg: str | None = None, **headers: Any) -> str:
        header = {k: v for k, v in {"kid": self.kid, **headers}.items() if v is not None}
        return jwt.encode(claims, self.private, algorithm=alg or self.alg, headers=header)


def rsa_key(kid: str, alg: str = "RS256") -> SigningKey:
    return SigningKey(kid, alg, rsa.generate_private_key(public_exponent=65537, key_size=2048))


def ec_key(kid: str, curve: ec.EllipticCurve | None = None, alg: str = "ES256") -> SigningKey:
    return SigningKey(kid, alg, ec.generate_private_key(curve or ec.SECP256R1()))


def jwks(*keys: SigningKey, **extra: Any) -> dict[str, Any]:
    return {"keys": [key.jwk(**extra) for key in keys]}


def claims(now: float = NOW, **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": "user-1",
        "tenant": "acme",
        "scope": "documents:read documents:write",
        "iat": int(now),
        "exp": int(now) + 300,
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _segments(header: dict[str, Any], payload: dict[str, Any]) -> str:
    return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(payload).encode())}"


def unsigned(payload: dict[str, Any], kid: str) -> str:
    """`alg: none`, no signature."""
    return _segments({"alg": "none", "typ": "JWT", "kid": kid}, payload) + "."


def hs256_with(secret: bytes, payload: dict[str, Any], kid: str) -> str:
    """HS256 "signed" with `secret` (the RSA public key's PEM: the HS/RS confusion attack)."""
    signing_input = _segments({"alg": "HS256", "typ": "JWT", "kid": kid}, payload)
    mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64(mac)}"
