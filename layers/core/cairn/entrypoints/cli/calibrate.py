"""`cairn calibrate --fixture FILE`: fit the configured embedding model's calibration (cosine to
relevance) on labelled questions and print the two settings that apply it."""

from __future__ import annotations

import argparse
import json

from pydantic import ValidationError

from cairn.domain.errors import InvalidInput


def cmd_calibrate(args: argparse.Namespace) -> int:
    from cairn.bootstrap.aws import embedder_for
    from cairn.entrypoints.cli.common import settings_from
    from cairn.services.search.calibration import Fixture, fit

    try:
        fixture = Fixture.model_validate(json.loads(args.fixture.read_text(encoding="utf-8")))
    except OSError as exc:
        raise InvalidInput(f"cannot read {args.fixture}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{args.fixture} is not JSON: {exc.msg} at line {exc.lineno}") from None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'fixture'}: {e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors(include_url=False)[:5]
        )
        raise InvalidInput(f"{args.fixture}: {problems}") from None
    embedder = embedder_for(settings_from(args))
    fitted = fit(embedder, fixture)
    c = fitted.calibration
    if args.json:
        print(json.dumps({"model": fitted.model_id, "midpoint": c.midpoint, "slope": c.slope,
                          "answered": fitted.answered, "unanswered": fitted.unanswered, "auc": fitted.auc,
                          "answered_above": fitted.answered_above,
                          "unanswered_above": fitted.unanswered_above}))  # fmt: skip
        return 0
    print(f"model {fitted.model_id}: {fitted.answered} questions with answers, {fitted.unanswered} without")
    print(f"best-match cosine separates them with AUC {fitted.auc:.3f}")
    print(
        f"fitted midpoint {c.midpoint} and slope {c.slope}: {fitted.answered_above:.0%} of the answered "
        f"and {fitted.unanswered_above:.0%} of the unanswered reach relevance 0.5"
    )
    print(f"apply it with CAIRN_RELEVANCE_MIDPOINT={c.midpoint} CAIRN_RELEVANCE_SLOPE={c.slope}")
    return 0
