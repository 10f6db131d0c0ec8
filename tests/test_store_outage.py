"""A store that goes away (issue 38, item 7): a PostgreSQL server that cannot be reached is one
sentence, for reads and writes alike, and an annotator who answers meanwhile keeps the pair and its
answer keys on screen with the documented "was not saved because …: press it again" sentence; the same
key saves the answer once the store is back. The outage is real: the app reaches the server through a
TCP forwarder that the test closes (every connection through it dropped) and opens again; the shared
server itself is never stopped."""

from __future__ import annotations

import socket
import threading

import pytest
from sqlalchemy.engine import make_url

from db import annotators, init_db, serving
from db import campaigns as camp
from db.engine import StoreUnavailable
from tests.annotation_fixtures import make_dataset, numbered_pairs
from tests.paths import REPO
from tests.store_fixtures import drop_postgres_database, fresh_postgres_database

GONE = "The store cannot be reached just now: try again in a moment, and tell the person who runs the app if it lasts."


class StoreProxy:
    """A TCP forwarder to a store's server: cut() closes it and every connection through it (whoever
    reaches the store through it finds it gone: connections dropped, new ones refused); restore()
    listens again on the same port."""

    def __init__(self, host: str, port: int):
        self.upstream = (host, port)
        self.lock = threading.Lock()
        self.sockets: list[socket.socket] = []
        self.port = 0
        self.restore()

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # cut
                return
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.sockets += [client, server]
            for source, target in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        for end in (source, target):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread; the port is refused at once
        except OSError:
            pass
        self.listener.close()
        with self.lock:
            ends, self.sockets = self.sockets, []
        for end in ends:
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            end.close()


@pytest.fixture
def proxied_postgres(postgres_server, migrated_postgres_template):
    """(URL straight to a fresh PostgreSQL database, URL of the same database through a StoreProxy, the proxy)."""
    url = fresh_postgres_database(postgres_server, template=migrated_postgres_template)
    parsed = make_url(url)
    proxy = StoreProxy(parsed.host, parsed.port)
    try:
        yield url, parsed.set(port=proxy.port).render_as_string(hide_password=False), proxy
    finally:
        proxy.cut()
        drop_postgres_database(postgres_server, url)


def campaign_with_annotator(engine):
    ds, _ = make_dataset(engine, "demo", numbered_pairs(5))
    cid = camp.create_campaign(engine, "Pilot", [ds], quota=2, n_training=0)
    aid, token = annotators.create_annotator(engine, cid, "ann")
    annotators.set_annotator_profile(engine, aid, "Ann", "good")
    return aid, token


@pytest.fixture
def labelling_app(monkeypatch):
    """open(url, token): the app (AppTest) on that store, opened on the annotator's link and drawn once."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    def open_app(url, token):
        monkeypatch.setenv("PLUIE_DB_URL", url)
        monkeypatch.setenv("PLUIE_NO_WORKER", "1")
        monkeypatch.delenv("PLUIE_ADMIN_PASSWORD", raising=False)
        monkeypatch.delenv("PLUIE_ADMIN_PASSWORD_HASH", raising=False)
        monkeypatch.chdir(REPO)
        st.cache_resource.clear()
        st.cache_data.clear()
        at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
        at.query_params["token"] = token
        return at.run()

    yield open_app
    st.cache_resource.clear()
    st.cache_data.clear()


def pair_on_screen(at) -> list[str]:
    return [h.proto.body for h in at.html if "pluie-pair" in h.proto.body and "<style>" not in h.proto.body]


def answer_keys(at) -> list[str]:
    return [button.key for button in at.button if button.key.startswith("answer-")]


@pytest.mark.postgres
def test_a_store_that_cannot_be_reached_is_one_sentence_for_reads_and_writes(proxied_postgres):
    direct, through, proxy = proxied_postgres
    aid, _ = campaign_with_annotator(init_db(direct))
    engine = init_db(through)
    item = serving.serve_next(engine, aid)
    proxy.cut()
    for call in (
        lambda: serving.progress(engine, aid),
        lambda: serving.serve_next(engine, aid),
        lambda: serving.record_label(engine, aid, item.position, 3, 1.0),
    ):
        with pytest.raises(StoreUnavailable) as caught:
            call()
        assert str(caught.value) == GONE and caught.value.reason == "the store cannot be reached"
        assert caught.value.transient and not caught.value.busy
    proxy.restore()
    serving.record_label(engine, aid, item.position, 3, 1.0)
    assert serving.progress(engine, aid).done == 1
    engine.dispose()


@pytest.mark.postgres
def test_an_answer_pressed_while_postgres_is_gone_keeps_the_pair_and_its_keys_and_is_saved_once_it_is_back(
    proxied_postgres, labelling_app
):
    direct, through, proxy = proxied_postgres
    engine = init_db(direct)
    aid, token = campaign_with_annotator(engine)
    at = labelling_app(through, token)
    shown, keys = pair_on_screen(at), answer_keys(at)
    assert len(shown) == 1 and keys == [f"answer-{level}-0" for level in range(5)]

    proxy.cut()
    at.button(key="answer-3-0").click().run()
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == [
        "Your answer “Same meaning” was not saved because the store cannot be reached: press it again in a moment."
    ]
    assert pair_on_screen(at) == shown and answer_keys(at) == keys
    assert serving.progress(engine, aid).done == 0

    proxy.restore()
    at.button(key="answer-3-0").click().run()  # the same pair, the same key: saved now
    assert not at.exception and not at.error
    assert serving.progress(engine, aid).done == 1
    assert pair_on_screen(at) != shown and answer_keys(at) == [f"answer-{level}-1" for level in range(5)]
    engine.dispose()


@pytest.mark.parametrize("store", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_store_lost_right_after_an_answer_keeps_the_answered_pair_and_its_keys_on_screen(
    store, tmp_path, monkeypatch, labelling_app, request
):
    """The answer is saved, then the store goes (SQLite: another write holds it past the busy timeout;
    PostgreSQL: the server cannot be reached) before the next pair could be read: the page says so and
    keeps the pair, its answer marked; the same key, pressed once the store is back, goes on."""
    import sqlite3

    def held_lock(path):  # another write holding the store (taken on the app's thread, released on this one)
        other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN EXCLUSIVE")
        return other

    if store == "sqlite":
        monkeypatch.setenv("PLUIE_DB_BUSY_TIMEOUT", "0.2")
        path = tmp_path / "store.db"
        url = through = f"sqlite:///{path}"
        lose, held = (lambda: held.append(held_lock(path))), []

        def back():
            for other in held:
                other.rollback()
                other.close()

        reason = "the store is busy"
    else:
        url, through, proxy = request.getfixturevalue("proxied_postgres")
        lose, back, reason = proxy.cut, proxy.restore, "the store cannot be reached"
    engine = init_db(url)
    aid, token = campaign_with_annotator(engine)
    at = labelling_app(through, token)
    shown = pair_on_screen(at)

    saved = serving.record_label

    def saved_then_lost(*args, **kwargs):
        saved(*args, **kwargs)
        lose()

    monkeypatch.setattr(serving, "record_label", saved_then_lost)
    try:
        at.button(key="answer-3-0").click().run()
    finally:
        monkeypatch.setattr(serving, "record_label", saved)
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == [
        f"Your answer “Same meaning” is saved, but the next pair cannot be shown because {reason}: "
        "press it again in a moment."
    ]
    assert pair_on_screen(at) == shown and answer_keys(at) == [f"answer-{level}-0" for level in range(5)]
    assert any("Your answer was **Same meaning**" in caption.value for caption in at.caption)
    back()
    assert serving.progress(engine, aid).done == 1

    at.button(key="answer-3-0").click().run()  # the same key: the answer stands, and the next pair comes
    assert not at.exception and not at.error
    assert answer_keys(at) == [f"answer-{level}-1" for level in range(5)]
    assert serving.progress(engine, aid).done == 1
    engine.dispose()


@pytest.mark.postgres
def test_the_load_harness_counts_an_outage_and_reports_instead_of_dying(proxied_postgres):
    """bench/annotators.py: an annotator whose store goes away mid-run (here while it keeps going back to
    earlier pairs, the call that used to be outside the error handling) counts the outage, goes on, and
    always reports; the store's server is reached with bounded waits."""
    import queue

    from bench.annotators import annotator, bounded, collect

    direct, through, proxy = proxied_postgres
    aid, _ = campaign_with_annotator(init_db(direct))
    assert "connect_timeout=5" in bounded(through) and "statement_timeout" in bounded(through)
    out, ready = queue.Queue(), threading.Barrier(1)
    cut = threading.Timer(1.0, proxy.cut)
    cut.start()
    try:
        annotator(bounded(through), aid, 3.0, 0.01, 1.0, 0, out, ready)  # back to an earlier pair every time
    finally:
        cut.cancel()
    messages = [out.get_nowait() for _ in range(out.qsize())]
    assert messages[0] == {"labelling": aid}
    result = messages[-1]
    assert result["annotator"] == aid and result["unreachable"] > 0 and result["errors"] == 0, result["first_error"]
    assert result["sent"] >= 1 and result["ended"] - result["began"] < 10

    class Gone:  # a process that ended without a report
        def is_alive(self):
            return False

        def join(self, timeout=None):
            pass

    results, died, hung = collect(queue.Queue(), {aid: Gone()}, seconds=1.0, grace=1.0)
    assert (results, died, hung) == ([], 1, 0)
