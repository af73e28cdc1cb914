"""The store's secret rotated on the AWS shape, end to end under moto: the table (DynamoDB) and the
secret (Secrets Manager) of one stack, a function container warm through the rotation and one
started after it. Rotated with Secrets Manager's own versions (`put-secret-value`: the old value
becomes AWSPREVIOUS) or with `cairn secret rotate` (a JSON ring as a new version), an erased
subject stays erased in both containers; once re-keyed, the previous key is dropped and the
subject still erased, nothing forgotten."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import boto3
import pytest

from cairn.adapters.aws.dynamodb_records import DynamoRecordStore
from cairn.adapters.aws.secrets_manager_secret import SecretsManagerSecret
from cairn.services.audit import AuditLog
from cairn.services.erasure.erased import ErasedSubjects
from cairn.services.erasure.subjects import Subject
from cairn.services.secret_rotation import SecretRotation
from tests.contract.aws_storage import DYNAMODB_CONFIG, REGION, TABLE, client, create_table, moto_with
from tests.fakes.clock import FakeClock

START = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("how", ["put-secret-value", "cairn secret rotate"])
def test_an_erased_subject_stays_erased_through_a_rotation_on_aws(
    monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    with moto_with(monkeypatch):
        dynamodb = client("dynamodb", DYNAMODB_CONFIG)
        create_table(dynamodb, TABLE)
        records = DynamoRecordStore(dynamodb, TABLE)
        secrets = boto3.client("secretsmanager", region_name=REGION)
        arn = secrets.create_secret(Name="cairn-store-dev", SecretString="G" * 64)["ARN"]
        clock = FakeClock(start=START, tick=timedelta(0))

        def container() -> ErasedSubjects:
            return ErasedSubjects(records, clock, SecretsManagerSecret(secrets, arn))

        def operator() -> SecretRotation:
            secret = SecretsManagerSecret(secrets, arn)
            return SecretRotation(
                secret,
                [AuditLog(records, clock, secret=secret).erased, ErasedSubjects(records, clock, secret)],
            )

        warm = container()
        warm.mark(Subject.of("session_actor", "alice"), ["brn_1"])
        clock.advance(60)
        if how == "put-secret-value":
            secrets.put_secret_value(SecretId=arn, SecretString="H" * 64)
        else:
            operator().rotate()

        cold = container()  # started after the rotation
        cold.mark(Subject.of("session_actor", "bea"), ["brn_1"])
        assert warm.actor_since("brn_1", "bea") == START + timedelta(seconds=60)  # reads the secret again
        assert operator().status().held == 1
        assert cold.actor_since("brn_1", "alice") == START  # under the previous key; now re-keyed
        assert operator().status().held == 0

        assert operator().drop_previous().previous == ()
        dropped = container()
        assert dropped.actor_since("brn_1", "alice") == START
        assert dropped.actor_since("brn_1", "carl") is None  # nothing forgotten
        assert records.get("meta", "erased-subjects-forgotten") is None
        assert warm.actor_since("brn_1", "alice") == START
