"""Sanity checks for the EvolIF topic pool and user personas.

The data files live in ``pytest_ifbench/data`` and feed the multi-turn
dialogue generator (topic layer: continue / new / backtrack; persona style).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

DATA_DIR = Path(__file__).resolve().parents[3] / "pytest_ifbench" / "benchmarks" / "evolif" / "data"
TOPICS_PATH = DATA_DIR / "topics.yaml"
PERSONAS_PATH = DATA_DIR / "personas.yaml"

# Must match the "# STYLE_VOCABULARY: [...]" comment at the top of
# evolif_personas.yaml.
STYLE_VOCABULARY = frozenset(
    {
        "polite",
        "verbose",
        "terse",
        "casual",
        "formal",
        "anxious",
        "enthusiastic",
        "skeptical",
        "humorous",
        "impatient",
        "technical",
        "hesitant",
        "direct",
        "warm",
    }
)

MIN_TOPICS = 120
MIN_PERSONAS = 20
MIN_TOPICS_PER_DOMAIN = 6
MIN_DOMAINS = 10

TOPIC_FIELDS = {"id", "domain", "title", "keywords", "questions", "follow_ups"}
PERSONA_FIELDS = {"id", "persona", "styles", "openers", "closers"}


def _load(path: Path):
    with path.open(encoding="utf-8") as fh:
        return yaml.load(fh, Loader=yaml.CSafeLoader)


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


@pytest.fixture(scope="module")
def topics() -> list[dict]:
    data = _load(TOPICS_PATH)
    assert isinstance(data, list)
    return data


@pytest.fixture(scope="module")
def personas() -> list[dict]:
    data = _load(PERSONAS_PATH)
    assert isinstance(data, list)
    return data


def _is_text(value) -> bool:
    return isinstance(value, str) and value.strip() == value and value != ""


# --------------------------------------------------------------------------
# topics
# --------------------------------------------------------------------------


def test_topic_count(topics):
    assert len(topics) >= MIN_TOPICS


def test_topic_fields(topics):
    for topic in topics:
        assert isinstance(topic, dict)
        assert set(topic) == TOPIC_FIELDS, topic.get("id")
        assert _is_text(topic["domain"]), topic["id"]
        assert re.fullmatch(r"[a-z_]+", topic["domain"]), topic["id"]
        assert _is_text(topic["title"]), topic["id"]


def test_topic_ids_unique_and_well_formed(topics):
    ids = [t["id"] for t in topics]
    dupes = [i for i, n in Counter(ids).items() if n > 1]
    assert not dupes, dupes
    for topic_id in ids:
        assert isinstance(topic_id, str) and re.fullmatch(r"t\d{3}", topic_id), topic_id


def test_topic_titles_unique(topics):
    titles = Counter(_norm(t["title"]) for t in topics)
    assert not [t for t, n in titles.items() if n > 1]


def test_domains_have_enough_topics(topics):
    per_domain = Counter(t["domain"] for t in topics)
    assert len(per_domain) >= MIN_DOMAINS, per_domain
    small = {d: n for d, n in per_domain.items() if n < MIN_TOPICS_PER_DOMAIN}
    assert not small, small


def test_keywords(topics):
    for topic in topics:
        keywords = topic["keywords"]
        assert isinstance(keywords, list), topic["id"]
        assert 3 <= len(keywords) <= 6, topic["id"]
        for kw in keywords:
            assert _is_text(kw), (topic["id"], kw)
            assert kw == kw.lower(), (topic["id"], kw)
        assert len(set(keywords)) == len(keywords), topic["id"]


def test_question_and_follow_up_counts(topics):
    for topic in topics:
        questions, follow_ups = topic["questions"], topic["follow_ups"]
        assert isinstance(questions, list) and 4 <= len(questions) <= 6, topic["id"]
        assert isinstance(follow_ups, list) and 3 <= len(follow_ups) <= 5, topic["id"]
        for text in questions + follow_ups:
            assert _is_text(text), (topic["id"], text)


def test_no_duplicate_questions_across_file(topics):
    seen = Counter(_norm(q) for t in topics for q in t["questions"])
    dupes = [q for q, n in seen.items() if n > 1]
    assert not dupes, dupes


def test_no_duplicate_follow_ups_across_file(topics):
    seen = Counter(_norm(f) for t in topics for f in t["follow_ups"])
    dupes = [f for f, n in seen.items() if n > 1]
    assert not dupes, dupes


def test_questions_and_follow_ups_disjoint(topics):
    questions = {_norm(q) for t in topics for q in t["questions"]}
    follow_ups = {_norm(f) for t in topics for f in t["follow_ups"]}
    assert not questions & follow_ups


# --------------------------------------------------------------------------
# personas
# --------------------------------------------------------------------------


def test_style_vocabulary_comment_matches_constant():
    header = [
        line
        for line in PERSONAS_PATH.read_text(encoding="utf-8").splitlines()
        if line.startswith("# STYLE_VOCABULARY:")
    ]
    assert len(header) == 1, "expected exactly one '# STYLE_VOCABULARY:' comment"
    declared = yaml.load(header[0].split(":", 1)[1], Loader=yaml.CSafeLoader)
    assert isinstance(declared, list)
    assert len(declared) == len(set(declared))
    assert set(declared) == STYLE_VOCABULARY


def test_persona_count(personas):
    assert len(personas) >= MIN_PERSONAS


def test_persona_fields(personas):
    for persona in personas:
        assert isinstance(persona, dict)
        assert set(persona) == PERSONA_FIELDS, persona.get("id")
        assert _is_text(persona["persona"]), persona["id"]


def test_persona_ids_unique_and_well_formed(personas):
    ids = [p["id"] for p in personas]
    dupes = [i for i, n in Counter(ids).items() if n > 1]
    assert not dupes, dupes
    for persona_id in ids:
        assert isinstance(persona_id, str) and re.fullmatch(r"p\d{2}", persona_id), persona_id


def test_persona_descriptions_unique(personas):
    descriptions = Counter(_norm(p["persona"]) for p in personas)
    assert not [d for d, n in descriptions.items() if n > 1]


def test_persona_styles_in_vocabulary(personas):
    for persona in personas:
        styles = persona["styles"]
        assert isinstance(styles, list), persona["id"]
        assert 1 <= len(styles) <= 3, persona["id"]
        assert len(set(styles)) == len(styles), persona["id"]
        unknown = set(styles) - STYLE_VOCABULARY
        assert not unknown, (persona["id"], unknown)


def test_persona_openers_and_closers(personas):
    for persona in personas:
        openers, closers = persona["openers"], persona["closers"]
        assert isinstance(openers, list), persona["id"]
        assert isinstance(closers, list), persona["id"]
        assert len(openers) == 0 or 2 <= len(openers) <= 4, persona["id"]
        assert len(closers) <= 4, persona["id"]
        for phrase in openers + closers:
            assert _is_text(phrase), (persona["id"], phrase)
            assert len(phrase) <= 60, (persona["id"], phrase)
