"""The HTTP API (/api/v1) and its Python client, through the README's server (server.py, a real process on a real
port, its own SQLite file) and the library's client (pluie_core.client.Lab over httpx): tokens made on the command
line, every write checked as the pages check it, errors as JSON sentences with their status, cursor pages, streamed
exports, the publish zip, the OpenAPI description."""

from __future__ import annotations

import http.client
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import httpx
import pandas as pd
import pytest

from db import access, init_db
from db.accounts import actor_for, add_account, disable_account, set_role
from db.models import ApiToken
from lab.roles import OPEN
from pluie_core.client import Lab, LabError
from tests.browser import start_app, stop_app
from tests.paths import DATASETS, REPO

pytestmark = pytest.mark.slow

ROWS = [
    {"source": f"The cat number {i} sleeps.", "hypothesis": f"Cat {i} is asleep.", "label": i % 2, "id": f"p{i}"}
    for i in range(12)
]


def make_token(db_url: str, name: str) -> str:
    """A token as an owner makes one for a person: `python -m db accounts token NAME`, its last line."""
    return token_made(start_token(db_url, name))


def start_token(db_url: str, name: str) -> subprocess.Popen:
    """`python -m db accounts token NAME` started (token_made waits for it and reads its token)."""
    return subprocess.Popen(
        [sys.executable, "-m", "db", "accounts", "token", name, "--db", db_url],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def token_made(command: subprocess.Popen) -> str:
    out, err = command.communicate(timeout=120)
    assert command.returncode == 0, err
    assert "shown only this once" in err
    return out.strip().splitlines()[-1]


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def lab_server(request, tmp_path_factory, migrated_copy):
    """The README's server with its API, on a SQLite file, then on a PostgreSQL database (each a copy of the
    session's migrated store)."""
    folder = tmp_path_factory.mktemp("api")
    db_url = migrated_copy(f"sqlite:///{folder / 'store.db'}")
    if request.param == "postgres":
        from tests.store_fixtures import fresh_postgres_database

        db_url = fresh_postgres_database(
            request.getfixturevalue("postgres_server"), template=request.getfixturevalue("migrated_postgres_template")
        )
    engine = init_db(db_url)
    with access.acting_as(OPEN):
        people = {
            name: add_account(engine, name, role, password="long enough pw")
            for name, role in (("olga", "owner"), ("otto", "organiser"), ("vera", "viewer"), ("dan", "organiser"))
        }
    # the four commands and the server start side by side (one after the other: 10 s of the module's 24 s)
    commands = {name: start_token(db_url, name) for name in people}
    server = start_app(
        db_url,
        folder / "server.log",
        extra_env={"PLUIE_DATA_DIR": str(folder / "data"), "PLUIE_TRUSTED_PROXIES": "127.0.0.1"},
    )
    tokens = {name: token_made(command) for name, command in commands.items()}
    yield server, engine, people, tokens
    stop_app(server)
    engine.dispose()


def test_a_token_is_shown_once_stored_hashed_and_acts_with_its_account_role(lab_server):
    server, engine, people, tokens = lab_server
    with engine.connect() as connection:
        stored = connection.execute(ApiToken.__table__.select()).mappings().all()
    assert len(stored) == 4 and all(row["token_hash"] != tokens[name] for row, name in zip(stored, tokens))
    if server.db_url.startswith("sqlite"):
        store_bytes = open(server.db_url.removeprefix("sqlite:///"), "rb").read()
    else:  # every row of every table, as text
        from db.models import Base

        with engine.connect() as connection:
            store_bytes = repr(
                [connection.execute(table.select()).all() for table in Base.metadata.sorted_tables]
            ).encode()
    assert not any(token.encode() in store_bytes for token in tokens.values())  # only its sha256 is kept

    with Lab(server.url, tokens["vera"]) as lab:
        assert lab.me() == {"account_id": people["vera"].id, "name": "vera", "role": "viewer"}
        assert isinstance(lab.datasets(), pd.DataFrame)  # a viewer reads
        with pytest.raises(LabError) as refused:  # and writes nothing
            lab.import_pairs(pd.DataFrame(ROWS), name="from a viewer")
        assert refused.value.status == 403
        assert "viewer" in refused.value.message and "import" in refused.value.message
    with Lab(server.url, tokens["olga"]) as lab:
        assert "from a viewer" not in set(lab.datasets().get("dataset", []))

    # the role at the time of the request: promoted, the same token writes; disabled, it stops at once
    with access.acting_as(actor_for(people["olga"])):
        set_role(engine, people["vera"].id, "organiser")
    with Lab(server.url, tokens["vera"]) as lab:
        assert lab.me()["role"] == "organiser"
    with access.acting_as(actor_for(people["olga"])):
        disable_account(engine, people["vera"].id)
    with Lab(server.url, tokens["vera"]) as lab, pytest.raises(LabError) as gone:
        lab.me()
    assert gone.value.status == 401 and "disabled" in gone.value.message


def test_errors_are_json_sentences_with_their_status_and_nothing_half_written(lab_server):
    server, engine, people, tokens = lab_server
    url = server.url + "/api/v1"
    no_token = httpx.get(f"{url}/datasets")
    assert no_token.status_code == 401 and "Authorization: Bearer" in no_token.json()["error"]
    with Lab(server.url, tokens["otto"]) as lab:
        before = len(lab.datasets())
        bad = ROWS[:3] + [{"source": "", "hypothesis": "nothing on the left"}] + ROWS[3:5]
        with pytest.raises(LabError) as refused:
            lab.import_pairs(pd.DataFrame(bad), name="half bad")
        assert refused.value.status == 400 and "source sentence is empty" in refused.value.message
        assert len(lab.datasets()) == before  # all or nothing
        with pytest.raises(LabError) as missing:
            lab.dataset(999_999)
        assert missing.value.status == 404 and missing.value.message == "There is no dataset 999999."
        with pytest.raises(LabError) as invalid:
            lab._json("POST", "/campaigns", json={"name": "x", "dataset_ids": "one"})
        assert invalid.value.status == 400 and invalid.value.message.startswith("dataset_ids:")
    # a body past the bound is refused from its header, before the server reads it
    connection = http.client.HTTPConnection(server.url.removeprefix("http://"), timeout=30)
    connection.putrequest("POST", "/api/v1/datasets")
    for header, value in (
        ("Authorization", f"Bearer {tokens['otto']}"),
        ("Content-Type", "application/json"),
        ("Content-Length", str(60 * 1024 * 1024)),
    ):
        connection.putheader(header, value)
    connection.endheaders()
    huge = connection.getresponse()
    assert huge.status == 413 and "at most 53 MB" in json.loads(huge.read())["error"]
    connection.close()
    openapi = httpx.get(f"{url}/openapi.json").json()
    assert {
        "/datasets",
        "/datasets/{dataset_id}/pairs",
        "/runs",
        "/runs/{run_id}/scores",
        "/campaigns",
        "/export",
        "/publish",
        "/webhooks",
    } <= set(openapi["paths"])


def test_wrong_tokens_are_throttled_like_passwords_per_address(lab_server):
    """A guesser behind the (trusted) proxy waits after five wrong tokens; anyone else goes on."""
    server, engine, people, tokens = lab_server
    url = server.url + "/api/v1/me"
    guesser = {"X-Forwarded-For": "203.0.113.7"}
    statuses = [
        httpx.get(url, headers={**guesser, "Authorization": f"Bearer pluie_guess{i}"}).status_code for i in range(7)
    ]
    assert statuses[:6] == [401] * 6 and statuses[6] == 429
    refused = httpx.get(url, headers={**guesser, "Authorization": f"Bearer {tokens['dan']}"})
    assert refused.status_code == 429 and "Too many attempts" in refused.json()["error"]  # this address waits
    assert int(refused.headers["Retry-After"]) >= 1
    other = httpx.get(url, headers={"X-Forwarded-For": "198.51.100.4", "Authorization": f"Bearer {tokens['dan']}"})
    assert other.status_code == 200 and other.json()["name"] == "dan"


def test_a_notebook_imports_pages_labels_and_publishes_through_the_client(lab_server, tmp_path):
    server, engine, people, tokens = lab_server
    frame = pd.DataFrame(ROWS)
    with Lab(server.url, tokens["olga"]) as lab:
        made = lab.import_pairs(frame, name="notebook pairs")
        assert made["pairs"] == 12 and made["name"] == "notebook pairs"
        dataset_id = made["dataset_id"]
        pairs = lab.pairs(dataset_id, page_size=5)  # three pages, read for you
        assert list(pairs["external_id"]) == [f"p{i}" for i in range(12)]
        assert list(lab.pairs(dataset_id, text="number 1")["external_id"]) == ["p1", "p10", "p11"]
        page = lab._json("GET", f"/datasets/{dataset_id}/pairs", params={"limit": 5})
        assert len(page["items"]) == 5 and page["next_after"] == page["items"][-1]["pair_id"]

        campaign = lab.campaigns.create(
            "notebook round", [dataset_id], quota=12, overlap=1, n_training=0, annotators=["ana"]
        )
        assert campaign["annotators"][0]["link"].startswith(server.url + "/?token=")
        with pytest.raises(LabError) as taken:
            lab.campaigns.create("notebook round", [dataset_id])
        assert taken.value.status == 400
        progress = lab.campaign(campaign["id"]).progress()
        assert progress["progress"]["pairs_in_queue"] == 12

        # ana labels three pairs in the browser's own way (db.serving), then the final labels come back
        from db.annotators import annotator_for_token
        from db.serving import record_label, serve_next

        ana = annotator_for_token(engine, campaign["annotators"][0]["token"])
        for level in (3, 0, 3):
            served = serve_next(engine, ana.id)
            record_label(engine, ana.id, served.position, level, 2.0, token=campaign["annotators"][0]["token"])
        final = lab.final_labels(campaign=campaign["id"])
        assert list(final.columns) == [
            "dataset",
            "pair_id",
            "external_id",
            "source",
            "hypothesis",
            "final_level",
            "final_label",
            "final_binary",
            "final_source",
        ]
        assert final["final_source"].value_counts().to_dict() == {"none": 9, "majority": 3}
        annotators = lab.campaign(campaign["id"]).annotators()
        assert annotators.loc[0, "annotator"] == "ana" and annotators.loc[0, "labelled"] == 3

        # the same table as CSV, streamed in chunks, is the Export page's file
        csv = httpx.get(
            f"{server.url}/api/v1/export",
            params={"datasets": str(dataset_id), "format": "csv"},
            headers={"Authorization": f"Bearer {tokens['olga']}"},
        )
        assert csv.headers["content-type"].startswith("text/csv")
        read = pd.read_csv(io.BytesIO(csv.content), encoding="utf-8-sig")
        assert len(read) == 12 and read["external_id"].tolist() == [f"p{i}" for i in range(12)]
        long = lab.export(datasets=[dataset_id], layout="long")
        assert len(long) == 3 and set(long["level_name"]) == {"Same meaning", "Very different"}

        zipped = lab.publish(tmp_path / "out.zip", licence="cc-by-4.0", dataset_ids=[dataset_id])
        names = zipfile.ZipFile(zipped).namelist()
        assert any(n.endswith("README.md") for n in names) and any(n.endswith(".parquet") for n in names)
    written = Path(server.log).parent / "data" / "api-publish"  # the server's PLUIE_DATA_DIR
    assert written.is_dir() and not any(written.iterdir())  # the folder went out as a zip and was removed


def test_a_run_is_created_followed_paused_and_its_scores_paged(lab_server):
    server, engine, people, tokens = lab_server
    with Lab(server.url, tokens["otto"]) as lab:
        dataset_id = lab.import_pairs(pd.DataFrame(ROWS), name="run pairs")["dataset_id"]
        run = lab.runs.create(
            model="levenshtein", kind="baseline", name="edit distance (api)", dataset_ids=[dataset_id]
        )
        assert run["status"] == "active" and run["total"] == 12 and run["done"] == 0
        assert lab.runs.pause(run["id"])["status"] == "paused"
        with pytest.raises(LabError) as twice:
            lab.runs.pause(run["id"])
        assert twice.value.status == 400 and "paused run cannot be set to paused" in twice.value.message
        assert lab.runs.resume(run["id"])["status"] == "active"
        worker = subprocess.run(
            [
                sys.executable,
                "worker.py",
                "--db",
                server.db_url,
                "--exit-when-idle",
                "--no-default-runs",
                "--runs",
                str(run["id"]),
            ],
            cwd=REPO,
            timeout=300,
            capture_output=True,
            text=True,
            env={**os.environ, "PLUIE_NO_WORKER": "1"},
        )
        assert worker.returncode == 0, worker.stderr[-2000:]
        done = lab.runs.wait(run["id"], timeout=30)
        assert done["done"] == 12 and done["up_to_date"]
        scores = lab.runs.scores(run["id"], page_size=5)
        assert len(scores) == 12 and scores["pair_id"].is_monotonic_increasing
        assert scores["score"].between(0, 1).all()
        with pytest.raises(LabError) as wrong:
            lab.runs.create(model="no-such-metric", kind="baseline", dataset_ids=[dataset_id])
        assert wrong.value.status == 400
        assert len(lab.runs.list()) == len({r["id"] for r in lab.runs.list()})


def test_a_corpus_file_uploads_as_the_import_page_reads_it(lab_server, tmp_path):
    """MRPC's own file, in its own format, through the multipart route: the same reader, the same counts; a file
    the reader refuses is one sentence and stores nothing."""
    server, engine, people, tokens = lab_server
    mrpc = DATASETS / "mrpc" / "msr_paraphrase_test.txt"
    from pluie_core.io import load_pairs

    expected = load_pairs(mrpc)
    with Lab(server.url, tokens["otto"]) as lab:
        made = lab.import_file(mrpc, name="MRPC test (api)")
        assert made["pairs"] == len(expected) == 1725 and made["name"] == "MRPC test (api)"
        row = lab.dataset(made["dataset_id"])
        assert row["pairs"] == 1725 and row["gold labels"] == 1725 and row["format"] == "mrpc"
        before = len(lab.datasets())
        broken = tmp_path / "broken.csv"
        broken.write_text("source,hypothesis,label\nA cat.,A dog.,1\nA cow.,,0\n", encoding="utf-8")
        with pytest.raises(LabError) as refused:
            lab.import_file(broken)
        assert refused.value.status == 400 and "hypothesis" in refused.value.message
        assert len(lab.datasets()) == before


def test_a_reviewer_decides_through_the_api_and_a_stale_revision_is_a_conflict(lab_server):
    server, engine, people, tokens = lab_server
    with access.acting_as(OPEN):
        add_account(engine, "rita", "reviewer", password="long enough pw")
    rita = make_token(server.db_url, "rita")
    with Lab(server.url, tokens["otto"]) as lab:
        dataset_id = lab.import_pairs(pd.DataFrame(ROWS[:3]), name="to review")["dataset_id"]
        pair_id = int(lab.pairs(dataset_id)["pair_id"].iloc[0])
    with Lab(server.url, rita) as lab:
        item = lab.review(pair_id)
        assert item["revision"] == 0 and item["adjudication"] is None
        assert lab.decide(pair_id, 3, revision=0, note="clearly the same") == 1
        with pytest.raises(LabError) as stale:  # decided on a page read before that decision
            lab.decide(pair_id, 0, revision=0)
        assert stale.value.status == 409 and "rita decided on this pair meanwhile" in stale.value.message
        item = lab.review(pair_id)
        assert (
            item["revision"] == 1 and item["adjudication"]["level"] == 3 and item["adjudication"]["reviewer"] == "rita"
        )
        with pytest.raises(LabError) as missing:
            lab.review(10**9)
        assert missing.value.status == 404
        with pytest.raises(LabError) as organisers:  # exports are an organiser's, as on the Export page
            lab.final_labels(datasets=[dataset_id])
        assert organisers.value.status == 403
    with Lab(server.url, tokens["otto"]) as lab:
        final = lab.final_labels(datasets=[dataset_id]).set_index("pair_id")
        assert (
            final.loc[pair_id, "final_source"] == "adjudicated" and final.loc[pair_id, "final_label"] == "Same meaning"
        )


def test_bad_bodies_get_a_sentence_and_leave_the_store_as_it_was(lab_server):
    """Issue 55 item 5: unknown fields, a NUL, JSON nested past reason and the wrong types are each a 4xx with a
    sentence, and nothing is written."""
    server, engine, people, tokens = lab_server
    url = server.url + "/api/v1"
    headers = {"Authorization": f"Bearer {tokens['otto']}"}
    with Lab(server.url, tokens["otto"]) as lab:
        before = sorted(map(str, lab._json("GET", "/datasets"))), len(lab._json("GET", "/campaigns"))
    answers = {
        "unknown field": httpx.post(
            f"{url}/datasets", headers=headers, json={"name": "u", "rows": ROWS[:2], "colour": "red"}
        ),
        "unknown field, campaign": httpx.post(
            f"{url}/campaigns", headers=headers, json={"name": "c", "dataset_ids": [1], "quota": 2, "speed": "fast"}
        ),
        "NUL": httpx.post(
            f"{url}/datasets",
            headers=headers,
            json={"name": "n", "rows": [{"source": "a\u0000b", "hypothesis": "c"}, *ROWS[:2]]},
        ),
        "deep": httpx.post(
            f"{url}/datasets",
            headers={**headers, "Content-Type": "application/json"},
            content=('{"name": "d", "rows": ' + "[" * 100_000 + "]" * 100_000 + "}").encode(),
        ),
        "not JSON": httpx.post(
            f"{url}/datasets",
            headers={**headers, "Content-Type": "application/json"},
            content=b'{"name": "x", "rows": [}',
        ),
        "wrong type": httpx.post(f"{url}/datasets", headers=headers, json={"name": ["a"], "rows": ROWS[:2]}),
    }
    for what, answer in answers.items():
        assert 400 <= answer.status_code < 500, (what, answer.status_code, answer.text[:300])
        error = answer.json()["error"]
        assert error and error.rstrip().endswith("."), (what, error)
    assert "colour" in answers["unknown field"].json()["error"]
    assert "speed" in answers["unknown field, campaign"].json()["error"]
    assert "NUL" in answers["NUL"].json()["error"]
    with Lab(server.url, tokens["otto"]) as lab:
        assert (sorted(map(str, lab._json("GET", "/datasets"))), len(lab._json("GET", "/campaigns"))) == before


def test_every_write_is_refused_to_a_viewer_as_the_pages_refuse_it(lab_server):
    """Issue 55 item 5: a viewer's token reads and writes nothing (403 with the sentence naming the action);
    an organiser's writes the same routes."""
    server, engine, people, tokens = lab_server
    url = server.url + "/api/v1"
    from db.api_tokens import create_token

    with access.acting_as(actor_for(people["olga"])):  # a viewer of its own (other tests disable vera)
        wren = add_account(engine, "wren", "viewer", password="long enough pw")
        _, token = create_token(engine, wren.id, "roles")
    viewer = {"Authorization": f"Bearer {token}"}
    with Lab(server.url, tokens["otto"]) as lab:
        made = lab.import_pairs(pd.DataFrame(ROWS[:4]), name="roles")
        dataset_id = made["dataset_id"]
        pair_id = int(lab.pairs(dataset_id)["pair_id"].iloc[0])
        run_id = lab._json(
            "POST",
            "/runs",
            json={"name": "roles lev", "kind": "baseline", "model": "levenshtein", "dataset_ids": [dataset_id]},
        )["id"]
        before = (
            sorted(map(str, lab._json("GET", "/datasets"))),
            len(lab._json("GET", "/runs")),
            len(lab._json("GET", "/campaigns")),
        )
    writes = [
        ("POST", "/datasets", {"json": {"name": "v", "rows": ROWS[:2]}}),
        ("POST", "/datasets/upload", {"files": {"file": ("v.jsonl", b'{"source": "a", "hypothesis": "b"}\n')}}),
        (
            "POST",
            "/runs",
            {"json": {"name": "v", "kind": "baseline", "model": "levenshtein", "dataset_ids": [dataset_id]}},
        ),
        ("POST", f"/runs/{run_id}/pause", {}),
        ("POST", f"/runs/{run_id}/cancel", {}),
        ("POST", "/campaigns", {"json": {"name": "v", "dataset_ids": [dataset_id], "quota": 2}}),
        ("POST", "/publish", {"json": {"licence": "mit", "dataset_ids": [dataset_id]}}),
        ("POST", "/webhooks", {"json": {"url": "http://127.0.0.1:9/x", "events": ["run.finished"]}}),
        ("PUT", f"/pairs/{pair_id}/final", {"json": {"level": 3, "revision": 0}}),
        ("GET", "/export", {}),
    ]
    for method, path, body in writes:
        answer = httpx.request(method, url + path, headers=viewer, timeout=60, **body)
        assert answer.status_code == 403, (method, path, answer.status_code, answer.text[:300])
        assert answer.json()["error"].startswith("wren is a viewer: only"), (path, answer.json())
    with Lab(server.url, tokens["otto"]) as lab:
        assert (
            sorted(map(str, lab._json("GET", "/datasets"))),
            len(lab._json("GET", "/runs")),
            len(lab._json("GET", "/campaigns")),
        ) == before
        # the organiser's token writes where the viewer's was refused
        lab._json("POST", f"/runs/{run_id}/pause")
        lab._json("POST", f"/runs/{run_id}/resume")
