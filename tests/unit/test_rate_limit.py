"""Token buckets per principal: a burst, then refusals with the right Retry-After, refilled over time;
refused credentials per address."""

from __future__ import annotations

import threading
import time

import pytest

from cairn.auth.principal import Principal, Via
from cairn.auth.rate_limit import FailedSignIns, RateLimiter, source_key


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def time_() -> FakeTime:
    return FakeTime()


def test_a_burst_is_allowed_then_refused_with_the_seconds_to_wait(time_: FakeTime) -> None:
    limiter = RateLimiter(2.0, 3, clock=time_)

    assert [limiter.take("k") for _ in range(3)] == [None, None, None]
    assert limiter.take("k") == pytest.approx(0.5)  # one token at 2/s


def test_a_refusal_takes_nothing(time_: FakeTime) -> None:
    limiter = RateLimiter(1.0, 1, clock=time_)
    limiter.take("k")

    assert limiter.take("k") == pytest.approx(1.0)
    assert limiter.take("k") == pytest.approx(1.0)
    time_.now += 1.0
    assert limiter.take("k") is None


def test_waiting_the_retry_after_is_enough(time_: FakeTime) -> None:
    # 1.1/s after 0.05 s: float arithmetic lands a hair under a whole token after the exact wait
    limiter = RateLimiter(1.1, 1, clock=time_)
    limiter.take("k")
    time_.now += 0.05

    wait = limiter.take("k")
    assert wait is not None
    time_.now += wait

    assert limiter.take("k") is None


def test_buckets_refill_continuously_up_to_the_burst(time_: FakeTime) -> None:
    limiter = RateLimiter(10.0, 5, clock=time_)
    for _ in range(5):
        limiter.take("k")

    time_.now += 0.25  # 2.5 tokens
    assert [limiter.take("k") is None for _ in range(3)] == [True, True, False]

    time_.now += 3600  # capped at the burst, however long the wait
    assert sum(limiter.take("k") is None for _ in range(10)) == 5


def test_cost_takes_several_tokens(time_: FakeTime) -> None:
    limiter = RateLimiter(1.0, 10, clock=time_)

    assert limiter.take("k", 8) is None
    assert limiter.take("k", 4) == pytest.approx(2.0)
    assert limiter.take("k", 2) is None


@pytest.mark.parametrize("cost", [0, -1, 11])
def test_a_cost_that_could_never_be_allowed_is_an_error(time_: FakeTime, cost: float) -> None:
    with pytest.raises(ValueError):
        RateLimiter(1.0, 10, clock=time_).take("k", cost)


def test_keys_are_independent(time_: FakeTime) -> None:
    limiter = RateLimiter(1.0, 2, clock=time_)
    limiter.take("alice")
    limiter.take("alice")

    assert limiter.take("alice") is not None
    assert limiter.take("bob") is None and limiter.take("bob") is None


@pytest.mark.parametrize("rate", [0.0, -1.0, float("inf")])
def test_a_rate_of_zero_or_less_is_unlimited(time_: FakeTime, rate: float) -> None:
    limiter = RateLimiter(rate, 0, clock=time_)

    assert all(limiter.take("k") is None for _ in range(10_000))
    assert len(limiter) == 0


@pytest.mark.parametrize(("rate", "burst", "max_keys"), [(float("nan"), 1, 1), (1.0, 0, 1), (1.0, 1, 0)])
def test_bad_settings_are_refused(rate: float, burst: int, max_keys: int) -> None:
    with pytest.raises(ValueError):
        RateLimiter(rate, burst, max_keys=max_keys)


def test_memory_stays_bounded(time_: FakeTime) -> None:
    limiter = RateLimiter(1.0, 1, clock=time_, max_keys=3)

    for i in range(1000):
        limiter.take(f"k{i}")
        assert len(limiter) <= 3


def test_the_least_recently_used_key_is_dropped_first(time_: FakeTime) -> None:
    limiter = RateLimiter(1.0, 1, clock=time_, max_keys=3)
    for key in ("a", "b", "c"):
        limiter.take(key)
    limiter.take("a")  # refused, but "a" is now the most recently used

    limiter.take("d")  # a fourth key: "b" goes

    assert limiter.take("a") is not None  # remembered: still empty
    assert limiter.take("c") is not None
    assert limiter.take("b") is None  # forgotten: a fresh bucket


class YieldingTime(FakeTime):
    """A clock standing still whose readings give up the GIL when subtracted, inviting races."""

    def __call__(self) -> float:
        return _Yielding(self.now)


class _Yielding(float):
    def __sub__(self, other: float) -> float:
        time.sleep(0)
        return float(self) - other


def test_concurrent_takes_never_allow_more_than_the_burst() -> None:
    # Given a clock that stands still, so nothing refills
    limiter = RateLimiter(1.0, 50, clock=YieldingTime())
    allowed = []
    start = threading.Barrier(8)

    def worker() -> None:
        start.wait()
        allowed.append(sum(limiter.take("shared") is None for _ in range(50)))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert len(allowed) == 8 and sum(allowed) == 50


def test_a_principals_refusal_is_in_whole_seconds_and_its_bucket_is_its_own(time_: FakeTime) -> None:
    limiter = RateLimiter(4.0, 2, clock=time_)
    alice = Principal("acme", "user:alice", frozenset(), Via.jwt)
    again = Principal("acme", "user:alice", frozenset({"documents:read"}), Via.api_key)

    assert [limiter.refusal_s(alice), limiter.refusal_s(again)] == [None, None]  # one bucket
    assert limiter.refusal_s(alice) == 1  # 0.25 s to wait, never "Retry-After: 0"
    assert limiter.refusal_s(Principal("other", "user:alice", frozenset(), Via.jwt)) is None
    time_.now += 0.25
    assert limiter.refusal_s(again) is None


def test_empty_for_tells_the_wait_and_takes_nothing(time_: FakeTime) -> None:
    limiter = RateLimiter(2.0, 2, clock=time_)
    assert limiter.empty_for("k") is None
    limiter.take("k")
    assert limiter.empty_for("k") is None
    assert limiter.empty_for("k") is None  # asking took nothing
    limiter.take("k")
    assert limiter.empty_for("k") == pytest.approx(0.5)
    time_.now += 0.5
    assert limiter.empty_for("k") is None
    assert RateLimiter(0, 1, clock=time_).empty_for("k") is None  # unlimited


def test_an_address_is_blocked_after_its_burst_of_refusals_and_freed_at_the_rate(time_: FakeTime) -> None:
    failures = FailedSignIns(6.0, 3, clock=time_)  # one more refusal every 10 s after three
    for _ in range(2):
        failures.refused("10.0.0.1")
    assert failures.blocked_s("10.0.0.1") is None
    failures.refused("10.0.0.1")
    assert failures.blocked_s("10.0.0.1") == 10
    assert failures.blocked_s("10.0.0.2") is None  # another address is its own
    time_.now += 9.5
    assert failures.blocked_s("10.0.0.1") == 1  # whole seconds, at least one
    time_.now += 0.5
    assert failures.blocked_s("10.0.0.1") is None
    failures.refused("10.0.0.1")  # one guess, then blocked again for the full interval
    assert failures.blocked_s("10.0.0.1") == 10


@pytest.mark.parametrize(
    ("one", "other", "shared"),
    [
        ("2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:fffe", True),  # one /64: one subscriber
        ("2001:db8:1:2::1", "2001:db8:1:3::1", False),
        ("::ffff:192.0.2.7", "192.0.2.7", True),  # IPv4 written as IPv6
        ("192.0.2.7", "192.0.2.8", False),
        ("testclient", "testclient", True),  # not an address: as written
    ],
)
def test_an_ipv6_slash_64_shares_one_bucket(time_: FakeTime, one: str, other: str, shared: bool) -> None:
    failures = FailedSignIns(1.0, 2, clock=time_)
    failures.refused(one)
    failures.refused(one)
    assert failures.blocked_s(one) is not None
    assert (failures.blocked_s(other) is not None) is shared
    assert (source_key(one) == source_key(other)) is shared


def test_what_is_given_back_returns_but_never_past_the_burst(time_: FakeTime) -> None:
    limiter = RateLimiter(1.0, 2, clock=time_)
    limiter.take("k")
    limiter.take("k")
    limiter.give_back("k")
    assert limiter.take("k") is None
    assert limiter.take("k") is not None
    for _ in range(5):
        limiter.give_back("k")
    assert [limiter.take("k") is None for _ in range(3)] == [True, True, False]


def test_attempts_at_once_hold_no_more_places_than_the_burst() -> None:
    failures = FailedSignIns(0.001, 5)  # all but no refill while the threads run
    start = threading.Barrier(40)
    held: list[bool] = []

    def attempt() -> None:
        start.wait()
        held.append(failures.attempt("10.0.0.1") is None)

    threads = [threading.Thread(target=attempt) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert held.count(True) == 5
    failures.returned("10.0.0.1")  # a held place whose credential was accepted
    assert failures.attempt("10.0.0.1") is None
    assert failures.attempt("10.0.0.1") is not None
