"""NMTScore's translation-based similarity measures (nmtscore.txt, Vamvas & Sennrich 2022), computed
on transformers directly.

The ``nmtscore`` package itself pins transformers<4.34, which cannot live beside this project's
transformers 5, so the three measures are written here from the paper's definitions (section 2). They are
checked against those definitions in tests/test_paper_baselines.py, and against the ``nmtscore`` library
itself (0.3.3, transformers 4.33.3, on the same tiny M2M100 weights) in tests/test_nmtscore_reference.py,
whose values tests/fixtures/make_nmtscore_fixture.py made in the library's own environment:

- token-level probabilities are length-normalised: p(A|B) = [∏ p(Aⁱ | B, A<ⁱ)]^(1/|A|), the geometric
  mean over A's tokens and its end-of-sentence token (the target-language token that starts the
  output is given, not scored, as in the package);
- NMTSCORE-direct(A|B) = p(A|B) / p(A|A);
- NMTSCORE-pivot(A|B) = p(A|B') / p(A|A'), with B' and A' translations into the pivot language;
- NMTSCORE-cross(A|B) = p(B'|A) / p(B'|B), with B' the translation of B into the target language;
- each symmetrised: sim(A, B) = ½ sim(A|B) + ½ sim(B|A) (the paper's recommended "normalized,
  both-directions" variants).

One difference from the package: it turns the mean cross-entropy L (in nats) into 2^(−L); the
paper's geometric mean is exp(−L), which is what this module returns (p_ours = p_package^(1/ln 2), and so
for a one-direction ratio; the two agree on order for one direction, not on the averaged values). Models:
multilingual seq2seq models with target-language tokens that transformers loads as M2M100
(facebook/m2m100_418M, m2m100_1.2B, NLLB checkpoints). A language code is the model's language token:
``__en__`` for M2M100 (tried first: a vocabulary may also hold "en", "es", "it"... as ordinary pieces),
else the code itself (a token such as eng_Latn), else the NLLB token of a two-letter code. Translations
use beam search (nmtscore's default: 5 beams) and at most 200 tokens in all, the language token and the
decoder's start token included (max_length 200, facebook/m2m100_418M's setting, which the package's
translation pipeline keeps).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from pluie_core.inputs import sentence_pairs

MEASURES = ("direct", "pivot", "cross")
MAX_TRANSLATION_LENGTH = 200  # tokens of a translation in all, as generate's max_length
# two-letter codes for NLLB checkpoints, whose codes look like eng_Latn
_NLLB_CODES = {
    "en": "eng_Latn",
    "de": "deu_Latn",
    "fr": "fra_Latn",
    "es": "spa_Latn",
    "it": "ita_Latn",
    "pt": "por_Latn",
    "nl": "nld_Latn",
    "sv": "swe_Latn",
    "fi": "fin_Latn",
    "ru": "rus_Cyrl",
    "zh": "zho_Hans",
    "ja": "jpn_Jpan",
    "ko": "kor_Hang",
    "ar": "arb_Arab",
    "tr": "tur_Latn",
}


class TranslationModel:
    """A multilingual translation model that scores and translates between language codes."""

    def __init__(self, name: str, device: str | None = None, batch_size: int = 16):
        import torch

        from pluie_core.hub import from_transformers

        AutoConfig, AutoModelForSeq2SeqLM, AutoTokenizer = from_transformers(
            "AutoConfig", "AutoModelForSeq2SeqLM", "AutoTokenizer"
        )

        try:
            config = AutoConfig.from_pretrained(name)
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0].rstrip(". ")
            raise ValueError(
                f"Could not load the translation model {name!r}: {first}. Check the model id or "
                "directory; without internet access it must already be on disk."
            ) from None
        if config.model_type != "m2m_100":
            raise ValueError(
                f"NMTScore needs a multilingual translation model with target-language tokens "
                f"(M2M100 or NLLB, e.g. facebook/m2m100_418M); {name!r} is a {config.model_type} model."
            )
        self.name = name
        self.tokenizer = AutoTokenizer.from_pretrained(name)
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.model = AutoModelForSeq2SeqLM.from_pretrained(name).to(self.device).eval()
        self.batch_size = batch_size
        self.start_id = self.model.config.decoder_start_token_id
        self.pad_id = self.tokenizer.pad_token_id
        self.eos_id = self.tokenizer.eos_token_id
        # ids a translation's text leaves out: the special tokens and every language token (transformers 5's
        # M2M100 tokenizer does not always count the __xx__ tokens as special, so decode would keep them)
        self._not_text = set(self.tokenizer.all_special_ids) | set(
            getattr(self.tokenizer, "lang_token_to_id", {}).values()
        )

    def lang_id(self, code: str) -> int:
        """The token id of a language code: its language token __code__ (M2M100) first, since "en", "es"...
        may also be ordinary pieces of the vocabulary; else the code itself (eng_Latn); else the NLLB
        token of a two-letter code (en → eng_Latn)."""
        unk = self.tokenizer.unk_token_id
        for token in (f"__{code}__", code, _NLLB_CODES.get(code)):
            if token:
                found = self.tokenizer.convert_tokens_to_ids(token)
                if isinstance(found, int) and found != unk:
                    return found
        raise ValueError(
            f"{code!r} is not a language code of the translation model {self.name!r} "
            "(M2M100 codes look like en, de; NLLB codes like eng_Latn)."
        )

    def _ids(self, texts: list[str], lang: str) -> list[list[int]]:
        """[language token] + the text's tokens + [end of sentence], as both model families write them."""
        lang = self.lang_id(lang)
        encoded = self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]
        return [[lang] + list(ids) + [self.eos_id] for ids in encoded]

    def _pad(self, rows: list[list[int]], value: int):
        import torch

        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), value, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = torch.tensor(row)
            mask[i, : len(row)] = 1
        return ids.to(self.device), mask.to(self.device)

    def score(self, sources: list[str], targets: list[str], src_lang: str, tgt_lang: str) -> np.ndarray:
        """p(target | source) per pair: the geometric mean of the target tokens' probabilities."""
        import torch

        src, tgt = self._ids(sources, src_lang), self._ids(targets, tgt_lang)
        out = np.empty(len(src))
        order = sorted(range(len(src)), key=lambda i: -(len(src[i]) + len(tgt[i])))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            ids, mask = self._pad([src[i] for i in chunk], self.pad_id)
            labels, label_mask = self._pad([tgt[i] for i in chunk], self.pad_id)
            decoder_in = torch.cat([torch.full_like(labels[:, :1], self.start_id), labels[:, :-1]], dim=1)
            with torch.inference_mode():
                logits = self.model(
                    input_ids=ids, attention_mask=mask, decoder_input_ids=decoder_in, decoder_attention_mask=label_mask
                ).logits
            logp = torch.log_softmax(logits.float(), dim=-1).gather(-1, labels.unsqueeze(-1)).squeeze(-1)
            scored = label_mask.clone()
            scored[:, 0] = 0  # the target-language token is given, not scored
            mean = (logp * scored).sum(-1) / scored.sum(-1)
            out[chunk] = torch.exp(mean).cpu().numpy()
        return out

    def translate(self, texts: list[str], src_lang: str, tgt_lang: str, num_beams: int = 5) -> list[str]:
        """Beam-search translations of at most MAX_TRANSLATION_LENGTH tokens in all (start and language
        tokens included), decoded without special tokens as the package's pipeline decodes them."""
        import torch

        src = self._ids(texts, src_lang)
        forced = self.lang_id(tgt_lang)
        result = [""] * len(src)
        order = sorted(range(len(src)), key=lambda i: -len(src[i]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            ids, mask = self._pad([src[i] for i in chunk], self.pad_id)
            with torch.inference_mode():
                generated = self.model.generate(
                    input_ids=ids,
                    attention_mask=mask,
                    forced_bos_token_id=forced,
                    num_beams=num_beams,
                    do_sample=False,
                    max_length=MAX_TRANSLATION_LENGTH,
                )
            for row, i in enumerate(chunk):
                kept = [t for t in generated[row].tolist() if t not in self._not_text]
                result[i] = self.tokenizer.decode(
                    kept, skip_special_tokens=True, clean_up_tokenization_spaces=False
                ).strip()
        return result


@lru_cache(maxsize=1)
def translation_model(name: str, device: str | None = None) -> TranslationModel:
    return TranslationModel(name, device)


def nmt_similarity(
    sources,
    hypotheses,
    measure: str,
    model: str,
    lang: str = "en",
    pivot_lang: str = "en",
    num_beams: int = 5,
    device: str | None = None,
) -> np.ndarray:
    """Normalised, symmetrised NMTScore-``measure`` (direct, pivot or cross) of each pair, both
    sentences in ``lang``; ``pivot_lang`` is the pivot (pivot) or target (cross) language."""
    if measure not in MEASURES:
        raise ValueError(f"Unknown NMTScore measure {measure!r}; use one of {', '.join(MEASURES)}.")
    sources, hypotheses = sentence_pairs(sources, hypotheses)
    if not sources:
        return np.zeros(0)
    nmt = translation_model(model, device)
    nmt.lang_id(lang), nmt.lang_id(pivot_lang)  # a wrong code is refused before any work
    unique = list(dict.fromkeys(sources + hypotheses))
    if measure == "direct":
        # p(A|B) / p(A|A), A and B both ways
        self_p = dict(zip(unique, nmt.score(unique, unique, lang, lang)))
        forward = nmt.score(sources, hypotheses, lang, lang)  # p(H|S)
        backward = nmt.score(hypotheses, sources, lang, lang)  # p(S|H)
        h_given_s = forward / np.array([self_p[h] for h in hypotheses])
        s_given_h = backward / np.array([self_p[s] for s in sources])
        return (h_given_s + s_given_h) / 2
    translated = dict(zip(unique, nmt.translate(unique, lang, pivot_lang, num_beams)))
    if measure == "pivot":
        # p(A|B') / p(A|A'), B' and A' in the pivot language
        self_p = dict(zip(unique, nmt.score([translated[u] for u in unique], unique, pivot_lang, lang)))
        h_given_s = nmt.score([translated[s] for s in sources], hypotheses, pivot_lang, lang)
        s_given_h = nmt.score([translated[h] for h in hypotheses], sources, pivot_lang, lang)
        return (
            h_given_s / np.array([self_p[h] for h in hypotheses]) + s_given_h / np.array([self_p[s] for s in sources])
        ) / 2
    # cross: p(B'|A) / p(B'|B), B' the translation of B into the target language
    self_p = dict(zip(unique, nmt.score(unique, [translated[u] for u in unique], lang, pivot_lang)))
    h_given_s = nmt.score(hypotheses, [translated[s] for s in sources], lang, pivot_lang)  # A = H, B = S
    s_given_h = nmt.score(sources, [translated[h] for h in hypotheses], lang, pivot_lang)  # A = S, B = H
    return (
        h_given_s / np.array([self_p[s] for s in sources]) + s_given_h / np.array([self_p[h] for h in hypotheses])
    ) / 2
