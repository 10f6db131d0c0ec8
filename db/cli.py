"""``python -m db publish FOLDER --licence LICENCE [...]``: the Export page's dataset folder written from
the command line (db.publish.publish_dataset): the Parquet file, the Arrow copy and the dataset card, of
the named datasets (by name or id; default: every dataset), optionally restricted to one campaign's pairs
and labels and to the labelled or adjudicated pairs, as the Export page offers. The store is the one the
app uses (``--db URL``, else PLUIE_DB_URL, pluie_lab.toml, the data folder's pluie_lab.db). A mistake (an
unknown dataset or campaign, a licence that is not an identifier, no store at that path, a folder that is
not new or empty) prints one line on stderr, exits with status 1 and writes nothing."""
from __future__ import annotations

import argparse
import sys
import unicodedata
from pathlib import Path

from sqlalchemy.engine import make_url

from db.annotation import list_campaigns
from db.datasets import list_datasets
from db.engine import database_url, init_db
from db.export import PAIR_SCOPES
from db.limits import _invisible, clean_name
from db.publish import PublishError, publish_dataset
from pluie_core.aggregation import METHODS as AGGREGATION_METHODS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m db", description="PLUIE Lab's store from the command line.")
    commands = parser.add_subparsers(dest="command", required=True)
    publish = commands.add_parser(
        "publish", help="write the store's datasets as a folder ready to publish (Parquet, Arrow, dataset card)",
        description="The Export page's dataset folder: data/train-00000-of-00001.parquet, the Arrow copy that "
                    "datasets.load_from_disk reads, and README.md, the dataset card. The folder must not exist "
                    "yet, or be empty.")
    publish.add_argument("folder", metavar="FOLDER", help="the folder to write")
    publish.add_argument("--licence", "--license", required=True, metavar="LICENCE",
                         help="the licence identifier of the card (Hugging Face's: cc-by-4.0, mit, other, ...)")
    publish.add_argument("--dataset", action="append", metavar="NAME",
                         help="a dataset to publish, by name or id (repeatable; default: every dataset)")
    publish.add_argument("--campaign", metavar="NAME",
                         help="only this campaign's pairs and the labels given in it (by name or id)")
    publish.add_argument("--pairs", choices=list(PAIR_SCOPES), default="all",
                         help="every pair (default), the labelled pairs or the adjudicated pairs")
    publish.add_argument("--aggregation", choices=list(AGGREGATION_METHODS),
                         help="add the method's aggregated labels, posterior and uncertainty (default: the "
                              "campaign's method when --campaign names one that chose one, else none)")
    publish.add_argument("--title", help="the card's title (default: the datasets' or the campaign's names)")
    publish.add_argument("--include-training", action="store_true",
                         help="also publish the labels of annotators' training trials")
    publish.add_argument("--db", metavar="URL",
                         help="the store (default: PLUIE_DB_URL, pluie_lab.toml, else the data folder's pluie_lab.db)")
    return parser


def _same_name(name: str) -> str:
    """A name as the store keeps it (db.limits.clean_name), for a name stored before names were cleaned too."""
    return unicodedata.normalize("NFC", "".join(c for c in name if not _invisible(c))).strip()


def _by_name_or_id(items, wanted: str, what: str) -> int:
    """The id of the item named ``wanted`` (typed as the store keeps names: "Zoë" typed in either Unicode
    form finds it; a control character is refused), or of the item whose id it is."""
    wanted = clean_name(f"The {what} name", wanted, ValueError)
    by_name = {_same_name(item.name): item.id for item in items} | {str(item.id): item.id for item in items}
    if wanted not in by_name:
        known = ", ".join(item.name for item in items) or "none yet"
        raise ValueError(f"No {what} {wanted!r} in the store (its {what}s: {known}).")
    return by_name[wanted]


def publish_store(args) -> Path:
    """db.publish.publish_dataset on the named datasets (and campaign) of the store."""
    url = database_url(args.db)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:") \
            and not Path(parsed.database).is_file():
        raise ValueError(f"There is no store at {parsed.database}: give its URL with --db (or PLUIE_DB_URL).")
    engine = init_db(url)
    try:
        ids = None
        if args.dataset:
            datasets = list_datasets(engine)
            ids = list(dict.fromkeys(_by_name_or_id(datasets, name, "dataset") for name in args.dataset))
        campaigns = list_campaigns(engine)
        campaign_id = None if args.campaign is None else _by_name_or_id(campaigns, args.campaign, "campaign")
        aggregation = getattr(args, "aggregation", None)
        if aggregation is None and campaign_id is not None:
            aggregation = next(c.aggregation for c in campaigns if c.id == campaign_id)  # None: majority only
        result = publish_dataset(engine, args.folder, ids, licence=args.licence, title=args.title,
                                 include_training=args.include_training, campaign_id=campaign_id, pairs=args.pairs,
                                 aggregation=aggregation,
                                 progress=lambda done, total: print(f"{done} of {total} pairs", file=sys.stderr))
    finally:
        engine.dispose()
    print(f"{result.n_pairs} pairs in {result.folder}", file=sys.stderr)
    return result.folder


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        print(f"wrote {publish_store(args)}", file=sys.stderr)
    except (PublishError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    return 0
