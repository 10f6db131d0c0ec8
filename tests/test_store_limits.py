"""One limit on the names and ids the store holds (db.limits.NAME_LENGTH, 200 characters), checked
before writing: PostgreSQL would refuse a longer one with a database error (StringDataRightTruncation)
where SQLite would keep it whole. Both stores answer with the same sentence and keep what they held."""

import pandas as pd
import pytest
import sqlalchemy as sa

from db import init_db, read_session
from db.annotators import create_annotators
from db.campaigns import CampaignError, create_campaign
from db.datasets import ImportRejected, import_pairs, store_totals
from db.limits import NAME_LENGTH
from db.models import Adjudication, Annotator, Campaign, Dataset, Pair, ScoreRun
from db.review import ReviewError, adjudicate
from db.runs import RunError, create_run


def _counts(engine) -> dict:
    with read_session(engine) as session:
        extra = {
            table.__tablename__: session.scalar(sa.select(sa.func.count()).select_from(table))
            for table in (Campaign, Annotator, ScoreRun, Adjudication)
        }
    return {**store_totals(engine), **extra}


def _refused(engine, error, call, sentence):
    before = _counts(engine)
    with pytest.raises(error) as caught:
        call()
    assert str(caught.value) == sentence
    assert _counts(engine) == before


def test_names_and_ids_over_200_characters_are_refused_alike_on_sqlite_and_postgresql(store_url):
    engine = init_db(store_url)
    at_limit, over = "d" * NAME_LENGTH, "d" * (NAME_LENGTH + 1)
    pairs = pd.DataFrame(
        {
            "source": ["A cat.", "A bird.", "A man."],
            "hypothesis": ["A dog.", "A fish.", "A woman."],
            "external_id": ["1", "i" * NAME_LENGTH, "3"],
        }
    )
    result = import_pairs(engine, at_limit, pairs)  # exactly at the limit: stored whole
    sentence = "{} has 201 characters; the limit is 200."
    _refused(engine, ImportRejected, lambda: import_pairs(engine, over, pairs), sentence.format("The dataset name"))
    too_long_id = pairs.assign(external_id=["1", "2", "i" * (NAME_LENGTH + 1)])
    _refused(
        engine, ImportRejected, lambda: import_pairs(engine, "ids", too_long_id), sentence.format("Pair 3: the pair id")
    )
    _refused(
        engine,
        ImportRejected,
        lambda: import_pairs(engine, "people", pairs.assign(**{"annotator:" + "a" * 201: 1})),
        sentence.format("The annotator name"),
    )

    campaign_id = create_campaign(engine, "c" * NAME_LENGTH, [result.dataset_id], quota=1, n_training=0)
    _refused(
        engine,
        CampaignError,
        lambda: create_campaign(engine, "c" * 201, [result.dataset_id], quota=1, n_training=0),
        sentence.format("The campaign name"),
    )
    _refused(
        engine,
        CampaignError,
        lambda: create_annotators(engine, campaign_id, ["ann", "n" * 201]),
        sentence.format(f"The annotator name “{'n' * 30}…”"),
    )
    create_run(engine, model="levenshtein", kind="baseline", name="r" * NAME_LENGTH, dataset_ids=[result.dataset_id])
    _refused(
        engine,
        RunError,
        lambda: create_run(engine, model="levenshtein", kind="baseline", name="r" * 201),
        sentence.format("The run name"),
    )
    with read_session(engine) as session:
        pair_id = session.scalar(sa.select(sa.func.min(Pair.id)))
    _refused(
        engine, ReviewError, lambda: adjudicate(engine, pair_id, 2, "v" * 201), sentence.format("The reviewer's name")
    )

    with read_session(engine) as session:
        assert session.scalar(sa.select(Dataset.name)) == at_limit
        assert session.scalars(sa.select(Pair.external_id).order_by(Pair.id)).all() == ["1", "i" * NAME_LENGTH, "3"]
        assert session.scalar(sa.select(Campaign.name)) == "c" * NAME_LENGTH
