"""The offline entity rules: what they find, and above all what ordinary prose does not yield."""

from __future__ import annotations

import pytest

from cairn.services.memory.entities import Mention
from cairn.services.memory.entity_rules import RuleEntityExtractor

PROSE = [
    "The meeting went well and we decided to ship on Friday. Performance was slow, so we will "
    "react quickly next week and keep some slack in the schedule.",
    "We had a great discussion. It was a good week overall, and the team shipped faster than expected.",
    "React quickly to incidents, then write down what happened and why.",
    "Slack in the plan is healthy. Bedrock of our strategy is trust; there is a tailwind for growth.",
    "Call with New York office tomorrow. Meeting with Product Marketing on Monday in San Francisco.",
    "Spoke to Acme Logistics about the invoice. Thanks to Customer Success for the quick turnaround.",
    "The new workflow is simpler. Our system works. The service was good. A pipeline of ideas.",
    "Use e.g. the lambda in the sort key, i.e. a pure function; see main.py and README.md and deploy.sh.",
    "Check self.app and request.app before the config.dev flag, then call foo.co(x).",
    "I asked him to go with the flow. She told me it was fine. By Tuesday, from March, with care.",
    "Summary: 1. Plan the quarter. 2. Review the budget. 3. Hire two engineers.",
    'When the API "returns null" the service "times out" and we retry.',
    "Notion of fairness matters. Stripe the wall blue. Sentry duty at night. Java is an island too.",
]


def _found(text: str) -> list[tuple[str, str]]:
    return [(m.name, m.type) for m in RuleEntityExtractor().extract(text)]


@pytest.mark.parametrize("text", PROSE)
def test_ordinary_prose_yields_no_entities(text: str) -> None:
    assert _found(text) == []


def test_lexicon_names_resolve_their_forms_and_carry_aliases() -> None:
    mentions = RuleEntityExtractor().extract(
        "Moved the API from postgres to DynamoDB; the k8s cluster builds nextjs apps with Node.js."
    )
    assert [(m.name, m.type) for m in mentions] == [
        ("PostgreSQL", "technology"),
        ("DynamoDB", "service"),
        ("Kubernetes", "technology"),
        ("Next.js", "technology"),
        ("Node.js", "technology"),
    ]
    pg = mentions[0]
    assert pg.role == "mentioned" and {"Postgres", "psql"} <= set(pg.aliases)
    assert "k8s" in mentions[2].aliases


def test_a_name_is_reported_once_at_its_first_mention() -> None:
    assert _found("Redis, then PostgreSQL, then redis again and Postgres.") == [
        ("Redis", "technology"),
        ("PostgreSQL", "technology"),
    ]


def test_tokens_inside_paths_handles_and_dotted_names_do_not_match() -> None:
    assert _found("See redis.conf, @redis/client, node-redis and /usr/bin/python3.") == []
    assert _found("A Redis-backed cache.") == [("Redis", "technology")]


def test_ordinary_words_match_only_capitalised_mid_sentence() -> None:
    assert _found("We use React and Slack, deploy on AWS Lambda and call Bedrock.") == [
        ("React", "technology"),
        ("Slack", "service"),
        ("Lambda", "service"),
        ("Bedrock", "service"),
    ]
    assert _found("React is nice.") == []  # a sentence's first word is prose too
    assert _found("we use react and slack") == []


def test_longest_form_wins() -> None:
    assert _found("Pair with GitHub Copilot, store in Amazon S3, host on Google Cloud.") == [
        ("GitHub Copilot", "agent"),
        ("S3", "service"),
        ("Google Cloud", "service"),
    ]


def test_domains_are_lower_cased_without_www() -> None:
    assert _found("Launch https://www.Acme.com/pricing and shop.example.co.uk; mail bob@initech.io.") == [
        ("acme.com", "domain"),
        ("shop.example.co.uk", "domain"),
        ("initech.io", "domain"),
    ]


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Met with Sarah Chen about pricing.", "Sarah Chen"),
        ("Call with Dr. John O'Brien next week.", "John O'Brien"),
        ("The rollout was approved by Priya Natarajan.", "Priya Natarajan"),
        ("Got an email from Jean-Luc Picard today.", "Jean-Luc Picard"),
        ("Assigned to Tom McDonald, cc: Ana Lima", "Tom McDonald"),
    ],
)
def test_people_follow_cues_that_only_people_take(text: str, name: str) -> None:
    assert _found(text)[0] == (name, "person")


@pytest.mark.parametrize(
    "text",
    [
        "Met with Sarah Chen Williams.",  # a third capitalised word: not sure it is a person
        "Worked with Sarah Chen.",  # bare "with" is no cue
        "Synced with Amazon Web Services.",
        "Asked Claude Code to refactor.",
        "Talked to @sarah about it.",
    ],
)
def test_people_need_a_clean_two_word_name_after_a_cue(text: str) -> None:
    assert all(kind != "person" for _, kind in _found(text))


def test_workflows_systems_and_services_by_their_cue() -> None:
    text = (
        "The Lead Intake workflow failed and the `daily-report` pipeline too. "
        'Our Mission Control dashboard is red; the "billing-gateway" service is down; '
        "ran the workflow named 'Invoice Sync'."
    )
    assert _found(text) == [
        ("Lead Intake", "workflow"),
        ("daily-report", "workflow"),
        ("Mission Control", "system"),
        ("billing-gateway", "service"),
        ("Invoice Sync", "workflow"),
    ]


def test_named_things_need_two_words_or_quotes_and_no_lexicon_name() -> None:
    assert _found(
        "The Billing service is down. Deploy workflow ran. The GitHub Actions pipeline passed."
    ) == [("GitHub", "service")]


def test_mentions_are_valid_for_the_service() -> None:
    for m in RuleEntityExtractor().extract("Met with Sarah Chen on acme.com about the Lead Intake workflow."):
        assert isinstance(m, Mention) and m.name.strip() == m.name and m.role == "mentioned"


def test_the_word_checks_find_what_running_every_rule_in_full_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lexicon forms absent from a text's words and kinds of rule 4 whose cues it lacks are
    skipped; the reference runs every form and every kind over every text."""
    import random

    from cairn.services.memory import entity_rules

    rng = random.Random(5)
    pieces = ["Billing Ledger", "Harbor", "the", "Our New", '"Night Shift"', "`etl-job`", "We", "run"]
    pieces += ["workflow", "Pipeline", "SYSTEM", "dashboards", "platform-wide", "API", "microservice"]
    pieces += ["service", "called", "named", "CRM", "ERP", "Kubernetes", "Alice Walker"]
    pieces += [
        "Amazon",
        "S3",
        "aws",
        "LAMBDA",
        "Lambda",
        "node",
        "JS",
        "Node.js",
        "nodejs",
        "k8s",
        "Step Functions",
    ]
    pieces += ["Functions", "claude code", "GitHub Copilot", "Copilot", "Google", "Cloud", "redis", "SQLITE3"]
    pieces += ["Tailwind", "CSS", "React.js", "n8n", "Postgres", "psql", "Web", "Services", "e.g."]
    pieces += ["\u017fystem", "pipel\u0131ne", "playboo\u212a", "micro\u017fervice", "café", "—"]  # İ ı ſ K
    pieces += ["\u212a8s", "Red\u0131s", "\u017fqlite", "AW\u017f", "\u0130"]
    seps = [" ", "  ", "\t", ", ", ". ", "\n", "-", "_", "/", "", ".", "@", "#"]
    texts = [
        "".join(rng.choice(pieces) + rng.choice(seps) for _ in range(rng.randint(1, 14))) for _ in range(4000)
    ]
    texts += [
        f"The Billing Ledger {cue} is down" for cue in ("\u017fystem", "pipel\u0131ne", "playboo\u212a")
    ]
    extractor = RuleEntityExtractor()
    found = [extractor.extract(text) for text in texts]
    monkeypatch.setattr(entity_rules, "plain", lambda text: False)
    assert found == [extractor.extract(text) for text in texts]
    named = [m for mentions in found for m in mentions if m.type in entity_rules._NAMED_CUES]
    assert len(named) > 150 and {m.type for m in named} == set(entity_rules._NAMED_CUES)
    lexicon = {m.name for mentions in found for m in mentions if m.type in ("technology", "service", "agent")}
    assert {"S3", "Lambda", "Node.js", "Kubernetes", "Step Functions", "Claude Code", "Redis"} <= lexicon
    # Found in text with the four characters too, where the word checks cannot be made:
    assert {m.name for m in extractor.extract("we run \u212a8s and Red\u0131s")} == {"Kubernetes", "Redis"}


def test_every_lexicon_form_is_ascii() -> None:
    """What the word check of the lexicon's forms rests on (domain/plain_text.py)."""
    from cairn.services.memory import entity_rules

    assert all(form.isascii() for form in entity_rules._LOOSE_ORDER)
