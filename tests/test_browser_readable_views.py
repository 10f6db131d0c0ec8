"""Issue 56 item 10, where only a browser shows them: why-this-score's tints tell red from blue in light mode
(and keep the text readable in both themes)."""
from __future__ import annotations

import pytest

from pages.explain_view import BOX
from pluie_core.explain import Explanation, TokenContribution, explanation_html

pytestmark = pytest.mark.browser


def lab(rgb) -> tuple[float, float, float]:
    """CIE L*a*b* (D65) of an sRGB colour."""
    def linear(c):
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgb)
    x, y, z = ((0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, 0.2126 * r + 0.7152 * g + 0.0722 * b,
               (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883)
    f = [t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in (x, y, z)]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


def delta_e(p, q) -> float:
    return sum((a - b) ** 2 for a, b in zip(lab(p), lab(q))) ** 0.5


def contrast(p, q) -> float:
    def luminance(rgb):
        r, g, b = ((c / 255) / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted((luminance(p), luminance(q)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def over(colour: list[float], ground: list[float]) -> tuple[float, ...]:
    """A translucent rgba colour as seen over an opaque one."""
    alpha = colour[3] if len(colour) > 3 else 1.0
    return tuple(alpha * c + (1 - alpha) * g for c, g in zip(colour[:3], ground[:3]))


def explanation() -> Explanation:
    """Four words: the weakest and the strongest push each way (0.02 and 1.0 of the largest)."""
    words = [("faint", 0.02), ("strong", 1.0), ("weak", -0.02), ("against", -1.0)]
    tokens, start = [], 0
    for word, push in words:
        tokens.append(TokenContribution(word, start, start + len(word), True, push))
        start += len(word) + 1
    sentence = " ".join(word for word, _ in words)
    return Explanation(sentence, sentence, 0.5, tuple(tokens), tuple(tokens))


COLOURS = """() => {
  const rgba = s => s.match(/[\\d.]+/g).map(Number);
  const box = document.querySelector('#box');
  const spans = [...box.querySelectorAll('span.pluie-why')];
  return {box: rgba(getComputedStyle(box).backgroundColor), text: rgba(getComputedStyle(box).color),
          spans: spans.map(s => [s.textContent, rgba(getComputedStyle(s).backgroundColor)])};
}"""


@pytest.mark.parametrize("scheme, text", [("light", "#31333f"), ("dark", "#fafafa")])  # Streamlit's text colours
def test_why_this_score_tints_tell_red_from_blue_and_keep_the_text_readable(browser, scheme, text):
    source, _ = explanation_html(explanation())
    page = browser.new_context(color_scheme=scheme).new_page()
    page.set_content(f'<html style="color-scheme:light dark"><body style="color:{text}">'
                     f'<div id="box" style="{BOX}">{source}</div></body></html>')
    seen = page.evaluate(COLOURS)
    ground, ink = seen["box"], seen["text"]
    shades = {word: over(colour, ground) for word, colour in seen["spans"]}
    assert (ground[0] > 200) == (scheme == "light"), ground  # the theme's own box
    # the faintest tints: red and blue told apart at a glance, and each told from the box (CIE76 ΔE; ~10 before)
    assert delta_e(shades["faint"], shades["weak"]) >= 25, (scheme, shades)
    assert min(delta_e(shades["faint"], ground), delta_e(shades["weak"], ground)) >= 20, (scheme, shades)
    # the strongest still read: the text at WCAG's 4.5:1 over them (2.5:1 on light mode's red before)
    for word in ("strong", "against"):
        assert contrast(shades[word], ink) >= 4.5, (scheme, word, shades[word])
    page.close()
