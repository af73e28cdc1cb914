"""Keys are generated once per session: RSA generation is the slow part of these tests."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from tests.unit.auth.fakes import FakeClock
from tests.unit.auth.tokens import SigningKey, ec_key, rsa_key


@pytest.fixture(scope="session")
def rsa1() -> SigningKey:
    return rsa_key("rsa-1")


@pytest.fixture(scope="session")
def rsa2() -> SigningKey:
    return rsa_key("rsa-2")


@pytest.fixture(scope="session")
def ec1() -> SigningKey:
    return ec_key("ec-1")


@pytest.fixture(scope="session")
def ec384() -> SigningKey:
    return ec_key("ec-384", ec.SECP384R1(), alg="ES384")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
