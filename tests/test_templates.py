"""Templates as data: wording checked against the paper text, user templates, placeholders."""

import json
import re

import pytest

from pluie_core.templates import BUILTIN_TEMPLATES, TemplateError, get_template, load_template_file
from tests.paths import REPO

PAPER = REPO.parent / "shared" / "papers" / "parapluie-coling2025.txt"


def paper_turns(start_marker: str, end_marker: str) -> list[tuple[str, str]]:
    """The (role, content) turns printed in the paper between two markers."""
    text = PAPER.read_text(encoding="utf-8")
    start = text.index(start_marker) + len(start_marker)
    block = text[start : text.index(end_marker, start)]
    parts = re.split(r"\((user|assistant)\):\s*", block)
    return [(role, " ".join(content.split())) for role, content in zip(parts[1::2], parts[2::2])]


def template_turns(name: str) -> list[tuple[str, str]]:
    # The paper prints the placeholders as S / H (bold **S** / **H** in A.4) and the generated
    # explanation as E.
    bold = name == "fs-direct"
    values = {"source": "**S**" if bold else "S", "hypothesis": "**H**" if bold else "H", "generated": "E"}
    turns = []
    for turn in BUILTIN_TEMPLATES[name].turns:
        content = turn["content"]
        for key, value in values.items():
            content = content.replace("{" + key + "}", value)
        turns.append((turn["role"], content))
    return turns


@pytest.mark.skipif(not PAPER.exists(), reason="shared papers not available")
def test_fs_direct_is_appendix_a4_word_for_word():
    from_paper = paper_turns("$\\mathbf{Tpl}_{FS-Direct}(\\mathbf{S}, \\mathbf{H})$:", "A.5 Additional results")
    assert len(from_paper) == 15  # instruction, reply, six examples with answers, the pair
    assert template_turns("fs-direct") == from_paper
    answers = [content for role, content in from_paper[3:-1:2]]
    assert answers == ["No", "Yes", "No", "No", "Yes", "No"]


@pytest.mark.skipif(not PAPER.exists(), reason="shared papers not available")
def test_direct_is_section_3_1_1_word_for_word():
    from_paper = paper_turns(
        "$\\mathbf{Tpl}_{\\mathrm{Direct}}(\\mathbf{S}, \\mathbf{H})$:", "3.1.2 Template: INDIRECT"
    )
    assert template_turns("direct") == from_paper


@pytest.mark.skipif(not PAPER.exists(), reason="shared papers not available")
def test_indirect_is_section_3_1_2_word_for_word():
    text = PAPER.read_text(encoding="utf-8")
    block = text[text.index("$\\mathbf{Tpl}_{\\mathrm{Indirect}}") : text.index("3.1.3 Template: FS-DIRECT")]
    assert "Generation $\\longrightarrow E$" in block  # the generation step sits before (assistant): E
    from_paper = paper_turns(
        "$\\mathbf{Tpl}_{\\mathrm{Indirect}}(\\mathbf{S},\\mathbf{H})$:", "3.1.3 Template: FS-DIRECT"
    )
    from_paper = [(role, content.replace(" Generation $\\longrightarrow E$", "")) for role, content in from_paper]
    assert template_turns("indirect") == from_paper
    assert BUILTIN_TEMPLATES["indirect"].needs_generation


def test_literal_first_and_last_few_shot_examples():
    """Also against literal strings copied from the paper, in case the text file moves."""
    turns = BUILTIN_TEMPLATES["fs-direct"].turns
    assert turns[2]["content"] == (
        'A: "Amrozi accused his brother, whom he called "the witness", of deliberately distorting his evidence ."; '
        "B: \"Amrozi accused his brother, whom he disparagingly referred to as 'the liar witness', of "
        'intentionally twisting his testimony."'
    )
    assert turns[12]["content"] == (
        'A: "The Jidanul River is a tributary of the Jiul de Vest River in Romania."; B: "The Jidanul River is '
        'a mere insignificant stream that flows into the grand Jiul de Vest River in Romania."'
    )
    assert turns[-1]["content"] == 'A: "{source}"; B: "{hypothesis}"'


def test_french_template_mirrors_fs_direct():
    french, english = BUILTIN_TEMPLATES["fs-direct-fr"], BUILTIN_TEMPLATES["fs-direct"]
    assert french.answers == ("Oui", "Non")
    assert len(french.turns) == len(english.turns)
    translate = {"Yes": "Oui", "No": "Non"}
    for fr, en in zip(french.turns[3:-1:2], english.turns[3:-1:2]):
        assert fr["content"] == translate[en["content"]]
    assert "Pennmakkal" in french.turns[4]["content"] and "oui" in french.turns[0]["content"]


def test_network_and_revision_templates():
    net = BUILTIN_TEMPLATES["net"]
    assert "network policy" in net.turns[0]["content"] and "Nile" in net.turns[0]["content"]
    rev = BUILTIN_TEMPLATES["rev"]
    assert rev.fields == {"instruction", "reference"}
    with_gold = rev.messages("Original.", "Revised.", instruction="Shorten it.", reference="Gold.")
    without = rev.messages("Original.", "Revised.", instruction="Shorten it.")
    assert len(with_gold) == len(without) + 2
    assert with_gold[2]["content"].endswith('Revised paragraph: "Gold."') and with_gold[3]["content"] == "Yes"
    assert (
        without[-1]["content"]
        == 'Instruction: "Shorten it."\nOriginal paragraph: "Original."\nRevised paragraph: "Revised."'
    )
    with pytest.raises(TemplateError, match="instruction"):
        rev.messages("Original.", "Revised.")


def test_builtin_names_are_case_insensitive():
    assert get_template("FS-DIRECT") is BUILTIN_TEMPLATES["fs-direct"]
    assert get_template("fs_direct") is BUILTIN_TEMPLATES["fs-direct"]
    with pytest.raises(TemplateError, match="Unknown template 'fsdirect'; use one of"):
        get_template("fsdirect")


def test_user_template_from_yaml_and_json(tmp_path):
    yaml_file = tmp_path / "mine.yaml"
    yaml_file.write_text(
        "answers: ['Same', 'Different']\n"
        "turns:\n"
        "  - {role: system, content: 'You compare sentences.'}\n"
        '  - {role: user, content: "First: {source}\\nSecond: {hypothesis}\\nSame or different?"}\n',
        encoding="utf-8",
    )
    template = get_template(str(yaml_file))
    assert template.name == "mine" and template.answers == ("Same", "Different")
    assert template.messages("a", "b")[1]["content"] == "First: a\nSecond: b\nSame or different?"
    json_file = tmp_path / "mine.json"
    json_file.write_text(json.dumps([{"role": "user", "content": "{source} vs {hypothesis}?"}]), encoding="utf-8")
    assert load_template_file(json_file).messages("a", "b") == [{"role": "user", "content": "a vs b?"}]
    assert get_template([{"role": "user", "content": "{source} / {hypothesis}"}]).answers == ("Yes", "No")


def test_placeholders_are_filled_once_and_other_braces_stay():
    template = get_template([{"role": "user", "content": 'JSON {"a": 1} {0} A={source} B={hypothesis}'}])
    content = template.messages("{hypothesis}", "h")[0]["content"]
    assert content == 'JSON {"a": 1} {0} A={hypothesis} B=h'
    # Any other {name} is a per-pair field the caller must give.
    with_field = get_template([{"role": "user", "content": "{topic}: {source} / {hypothesis}"}])
    assert with_field.fields == {"topic"}
    assert with_field.messages("s", "h", topic="Cats")[0]["content"] == "Cats: s / h"
    with pytest.raises(TemplateError, match="needs the per-pair field"):
        with_field.messages("s", "h")


@pytest.mark.parametrize(
    "turns,message",
    [
        ([{"role": "user", "content": "only {source}"}], "never uses {hypothesis}"),
        ([{"role": "judge", "content": "{source} {hypothesis}"}], "role 'judge'"),
        (
            [{"role": "user", "content": "{source} {hypothesis}"}, {"role": "assistant", "content": "Yes"}],
            "ends with an assistant turn",
        ),
        ([{"role": "user", "content": True}], "is not text"),
        ({"answers": [True, False], "turns": [{"role": "user", "content": "{source} {hypothesis}"}]}, "quoted in YAML"),
        ({"turns": [{"role": "user", "content": "{source} {hypothesis}"}], "colour": "red"}, "Unknown template key"),
    ],
)
def test_invalid_user_templates_say_what_to_change(turns, message):
    with pytest.raises(TemplateError, match=re.escape(message)):
        get_template(turns)


def test_unquoted_yes_in_yaml_file_is_explained(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("answers: [Yes, No]\nturns:\n  - {role: user, content: '{source} {hypothesis}'}\n")
    with pytest.raises(TemplateError, match="quoted in YAML"):
        get_template(path)
