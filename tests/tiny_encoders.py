"""Tiny random encoders and translation models for the baselines' tests (no download, no GPU).

``build_tiny_bert(directory)``: a 2-layer random BERT with a WordPiece tokenizer trained on the fly,
saved with ``save_pretrained``; bert-score and sentence-transformers load it from that directory as
they would a user's model id.

``build_tiny_nllb(directory)``: a 2-layer random M2M100-architecture translation model with an NLLB
tokenizer (a BPE vocabulary trained on the fly, the language codes eng_Latn, deu_Latn, ... as
special tokens), saved with ``save_pretrained`` and reloaded by ``AutoTokenizer`` /
``AutoModelForSeq2SeqLM`` like facebook/nllb-200-distilled-600M.
"""

from __future__ import annotations

from pathlib import Path

import pytest

CORPUS = [
    "The cat drinks water.",
    "The cat drinks milk.",
    "A man is playing a guitar.",
    "Someone plays the guitar.",
    "Stock markets fell sharply today.",
    "Have you ever seen a tsunami ?",
    "Have you ever seen a tiramisu ?",
    "The quick brown fox jumps over the lazy dog.",
    "Die Katze trinkt Wasser.",
    "Der Mann spielt Gitarre.",
] * 20


def build_tiny_bert(directory, seed: int = 0) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertModel, BertTokenizerFast

    directory = Path(directory)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    raw = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    raw.normalizer = normalizers.BertNormalizer(lowercase=True)
    raw.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    raw.decoder = decoders.WordPiece()
    raw.train_from_iterator(
        CORPUS, trainers.WordPieceTrainer(vocab_size=200, special_tokens=specials, show_progress=False)
    )
    raw.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", raw.token_to_id("[CLS]")), ("[SEP]", raw.token_to_id("[SEP]"))],
    )
    tokenizer = BertTokenizerFast(
        tokenizer_object=raw,
        unk_token="[UNK]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        mask_token="[MASK]",
        model_max_length=128,
    )
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    BertModel(config).eval().save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


LANGUAGES = ["eng_Latn", "deu_Latn", "fra_Latn"]


def build_tiny_nllb(directory, seed: int = 2) -> Path:
    import json

    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import M2M100Config, M2M100ForConditionalGeneration, NllbTokenizer

    directory = Path(directory)
    specials = ["<s>", "<pad>", "</s>", "<unk>"]  # ids 0-3, as in NLLB
    raw = Tokenizer(models.BPE(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    raw.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=300, special_tokens=specials, show_progress=False))
    model_json = json.loads(raw.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model_json["merges"]]
    tokenizer = NllbTokenizer(
        vocab=model_json["vocab"], merges=merges, extra_special_tokens=LANGUAGES, src_lang="eng_Latn"
    )
    torch.manual_seed(seed)
    config = M2M100Config(
        vocab_size=len(tokenizer),
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=256,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=2,
        scale_embedding=True,
        init_std=0.1,  # with seed 2: translations that differ between sentences (most random seeds give one output)
    )
    model = M2M100ForConditionalGeneration(config).eval()
    model.generation_config.forced_bos_token_id = None
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> str:
    """A tiny random BERT directory (import the fixture into a test module to use it)."""
    return str(build_tiny_bert(tmp_path_factory.mktemp("tiny-bert")))


@pytest.fixture(scope="session")
def tiny_nllb(tmp_path_factory) -> str:
    """A tiny random NLLB-style translation model directory."""
    return str(build_tiny_nllb(tmp_path_factory.mktemp("tiny-nllb")))
