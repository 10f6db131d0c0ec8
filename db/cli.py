"""``python -m db publish FOLDER --licence LICENCE [...]``: the Export page's dataset folder written from
the command line (db.publish.publish_dataset): the Parquet file, the Arrow copy and the dataset card, of
the named datasets (by name or id; default: every dataset), optionally restricted to one campaign's pairs
and labels and to the labelled or adjudicated pairs, as the Export page offers. The store is the one the
app uses (``--db URL``, else PLUIE_DB_URL, pluie_lab.toml, the data folder's pluie_lab.db). A mistake (an
unknown dataset or campaign, a licence that is not an identifier, no store at that path, a folder that is
not new or empty) prints one line on stderr, exits with status 1 and writes nothing.

``python -m db accounts list|add|invite|role|disable|enable|password|end-sessions|token|tokens|revoke-token``: the Accounts page's
changes (db.accounts). Whoever can open the store is its owner here: the changes are made as "command
line", which the activity log and the accounts' "created by" show. Passwords are read from stdin (a
terminal asks twice, unseen), never from the arguments, which other users of the machine can list. A
mistake (an unknown account, a role that is not one, the last owner demoted) prints one line on stderr,
exits with status 1 and leaves the store as it was."""

from __future__ import annotations

import argparse
import getpass
import sys
import unicodedata
from pathlib import Path

from sqlalchemy.engine import make_url

from db import access, accounts, api_tokens, init_db
from db.campaigns import list_campaigns
from db.datasets import list_datasets
from db.engine import StoreUnavailable, database_url
from db.export import PAIR_SCOPES
from db.limits import clean_name, invisible
from db.publish import PublishError, publish_dataset
from lab.roles import ROLE_HELP, ROLES, Actor, NotAllowed, with_article
from pluie_core.aggregation import METHODS as AGGREGATION_METHODS

COMMAND_LINE = Actor("command line", "owner")  # who the activity log names for changes made here


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m db", description="PLUIE Lab's store from the command line.")
    commands = parser.add_subparsers(dest="command", required=True)
    publish = commands.add_parser(
        "publish",
        help="write the store's datasets as a folder ready to publish (Parquet, Arrow, dataset card)",
        description="The Export page's dataset folder: data/train-00000-of-00001.parquet, the Arrow copy that "
        "datasets.load_from_disk reads, and README.md, the dataset card. The folder must not exist "
        "yet, or be empty.",
    )
    publish.add_argument("folder", metavar="FOLDER", help="the folder to write")
    publish.add_argument(
        "--licence",
        "--license",
        required=True,
        metavar="LICENCE",
        help="the licence identifier of the card (Hugging Face's: cc-by-4.0, mit, other, ...)",
    )
    publish.add_argument(
        "--dataset",
        action="append",
        metavar="NAME",
        help="a dataset to publish, by name or id (repeatable; default: every dataset)",
    )
    publish.add_argument(
        "--campaign", metavar="NAME", help="only this campaign's pairs and the labels given in it (by name or id)"
    )
    publish.add_argument(
        "--pairs",
        choices=list(PAIR_SCOPES),
        default="all",
        help="every pair (default), the labelled pairs or the adjudicated pairs",
    )
    publish.add_argument(
        "--aggregation",
        choices=list(AGGREGATION_METHODS),
        help="add the method's aggregated labels, posterior and uncertainty (default: the "
        "campaign's method when --campaign names one that chose one, else none)",
    )
    publish.add_argument("--title", help="the card's title (default: the datasets' or the campaign's names)")
    publish.add_argument(
        "--include-training", action="store_true", help="also publish the labels of annotators' training trials"
    )
    publish.add_argument(
        "--db",
        metavar="URL",
        help="the store (default: PLUIE_DB_URL, pluie_lab.toml, else the data folder's pluie_lab.db)",
    )
    add_accounts_parser(commands)
    return parser


def add_accounts_parser(commands) -> None:
    roles = "; ".join(f"{role}: {ROLE_HELP[role]}" for role in ROLES)
    group = commands.add_parser(
        "accounts",
        help="the people who sign in to the app, and their roles",
        description=f"Accounts and roles ({roles}).",
    )
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument(
        "--db",
        metavar="URL",
        help="the store (default: PLUIE_DB_URL, pluie_lab.toml, else the data folder's pluie_lab.db)",
    )
    actions = group.add_subparsers(dest="action", required=True)
    actions.add_parser("list", parents=[store], help="every account: name, e-mail, role, how it signs in")
    add = actions.add_parser("add", parents=[store], help="add a person (the store's first account needs no owner)")
    add.add_argument("name", metavar="NAME")
    add.add_argument("--role", required=True, metavar="ROLE", help=", ".join(ROLES))
    add.add_argument("--email", metavar="E", help="their e-mail, for signing in with the identity provider")
    add.add_argument(
        "--password-stdin",
        action="store_true",
        help="read their password from stdin (else: give them an invitation link, `invite NAME`)",
    )
    for action, help_text in (
        (
            "invite",
            "print a new invitation link (works once, shown once) where NAME sets a password; it replaces the last one",
        ),
        ("disable", "NAME cannot sign in any more (their sessions end)"),
        ("enable", "NAME can sign in again"),
        ("password", "set NAME's password, read from stdin (their sessions end)"),
        ("end-sessions", "sign NAME out on every browser"),
    ):
        actions.add_parser(action, parents=[store], help=help_text).add_argument("name", metavar="NAME")
    role = actions.add_parser("role", parents=[store], help="change NAME's role (their sessions end)")
    role.add_argument("name", metavar="NAME")
    role.add_argument("role", metavar="ROLE", help=", ".join(ROLES))
    token = actions.add_parser(
        "token", parents=[store], help="print a new personal API token of NAME on the last line (shown once; /api/v1)"
    )
    token.add_argument("name", metavar="NAME")
    token.add_argument("--label", default="command line", help="what the token is for, as its list shows it")
    actions.add_parser(
        "tokens", parents=[store], help="NAME's API tokens: id, name, first characters, last use, state"
    ).add_argument("name", metavar="NAME")
    revoke = actions.add_parser("revoke-token", parents=[store], help="end the API token with this id at once")
    revoke.add_argument("name", metavar="NAME")
    revoke.add_argument("token_id", metavar="ID", type=int)


def _same_name(name: str) -> str:
    """A name as the store keeps it (db.limits.clean_name), for a name stored before names were cleaned too."""
    return unicodedata.normalize("NFC", "".join(c for c in name if not invisible(c))).strip()


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
    if (
        parsed.get_backend_name() == "sqlite"
        and parsed.database not in (None, "", ":memory:")
        and not Path(parsed.database).is_file()
    ):
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
        result = publish_dataset(
            engine,
            args.folder,
            ids,
            licence=args.licence,
            title=args.title,
            include_training=args.include_training,
            campaign_id=campaign_id,
            pairs=args.pairs,
            aggregation=aggregation,
            progress=lambda done, total: print(f"{done} of {total} pairs", file=sys.stderr),
        )
    finally:
        engine.dispose()
    print(f"{result.n_pairs} pairs in {result.folder}", file=sys.stderr)
    return result.folder


def read_password(stdin: bool = True) -> str:
    """A password from stdin: asked twice, unseen, at a terminal; else its first line."""
    if sys.stdin.isatty():
        first = getpass.getpass("Password: ")
        if getpass.getpass("The same password again: ") != first:
            raise ValueError("The two passwords differ; nothing was changed.")
        return first
    line = sys.stdin.readline()
    if not line:
        raise ValueError("No password on stdin; nothing was changed.")
    return line.rstrip("\r\n")


def _open_store(url_arg, create: bool):
    """The store's engine; a SQLite path with no store refused unless ``create`` (a store's first account
    may be added before the app first started)."""
    url = database_url(url_arg)
    parsed = make_url(url)
    if (
        not create
        and parsed.get_backend_name() == "sqlite"
        and parsed.database not in (None, "", ":memory:")
        and not Path(parsed.database).is_file()
    ):
        raise ValueError(f"There is no store at {parsed.database}: give its URL with --db (or PLUIE_DB_URL).")
    return init_db(url)


def _named(engine, name: str) -> accounts.AccountInfo:
    found = accounts.account_by_name(engine, name)
    if found is None:
        names = ", ".join(a.name for a in accounts.list_accounts(engine)) or "none yet"
        raise ValueError(f"No account {name!r} in the store (its accounts: {names}).")
    return found


def _signs_in(info: accounts.AccountInfo) -> str:
    ways = (
        (["password"] if info.has_password else [])
        + (["invitation waiting"] if info.invite_expires_at else [])
        + ([f"provider ({info.email})"] if info.email else [])
    )
    return ", ".join(ways) or "not yet (invite them)"


def accounts_command(args) -> None:
    """One ``accounts`` action on the store, made as the command line (an owner)."""
    engine = _open_store(args.db, create=args.action == "add")
    try:
        with access.acting_as(COMMAND_LINE):
            _accounts_action(engine, args)
    finally:
        engine.dispose()


def _accounts_action(engine, args) -> None:
    if args.action == "list":
        for info in accounts.list_accounts(engine):
            state = "disabled" if not info.active else "active"
            print("\t".join([info.name, info.email or "-", info.role, _signs_in(info), info.created_by or "-", state]))
        return
    if args.action == "add":
        password = read_password() if args.password_stdin else None
        info = accounts.add_account(engine, args.name, args.role, email=args.email, password=password)
        print(f"added {info.name} as {info.role}", file=sys.stderr)
        if not info.has_password and not info.email:
            print(
                f"{info.name} has no password yet: `python -m db accounts invite {info.name}` prints their "
                "invitation link.",
                file=sys.stderr,
            )
        return
    info = _named(engine, args.name)
    if args.action == "invite":
        token = accounts.invite(engine, info.id)
        print(
            f"The invitation link of {info.name}, shown only this once (it works once, for "
            f"{accounts.INVITE_HOURS:g} hours): the app's address followed by",
            file=sys.stderr,
        )
        print(f"/?invite={token}")
    elif args.action == "role":
        print(f"{info.name} is now {with_article(accounts.set_role(engine, info.id, args.role).role)}", file=sys.stderr)
    elif args.action == "disable":
        accounts.disable_account(engine, info.id)
        print(f"{info.name} is disabled", file=sys.stderr)
    elif args.action == "enable":
        accounts.enable_account(engine, info.id)
        print(f"{info.name} is enabled", file=sys.stderr)
    elif args.action == "password":
        accounts.set_password(engine, info.id, read_password())
        print(f"the password of {info.name} is set; their sessions ended", file=sys.stderr)
    elif args.action == "end-sessions":
        accounts.end_sessions(engine, info.id)
        print(f"every session of {info.name} ended", file=sys.stderr)
    elif args.action == "token":
        made, token = api_tokens.create_token(engine, info.id, args.label)
        print(
            f"A new API token of {info.name} ({made.name!r}, id {made.id}), shown only this once; send it as "
            "Authorization: Bearer <token>:",
            file=sys.stderr,
        )
        print(token)
    elif args.action == "tokens":
        for made in api_tokens.list_tokens(engine, info.id):
            print(
                "\t".join(
                    [
                        str(made.id),
                        made.name,
                        made.prefix + "…",
                        str(made.last_used_at or "never used"),
                        "live" if made.live else f"revoked {made.revoked_at}",
                    ]
                )
            )
    elif args.action == "revoke-token":
        mine = {made.id for made in api_tokens.list_tokens(engine, info.id)}
        if args.token_id not in mine:
            raise ValueError(f"{info.name} has no token {args.token_id} (`python -m db accounts tokens {info.name}`).")
        api_tokens.revoke_token(engine, args.token_id)
        print(f"the token {args.token_id} of {info.name} is revoked", file=sys.stderr)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    # the command line is the machine's operator (db.access: said here, at its start); the account commands act as
    # COMMAND_LINE, an owner the activity log names
    access.install_operator()
    try:
        if args.command == "accounts":
            accounts_command(args)
        else:
            print(f"wrote {publish_store(args)}", file=sys.stderr)
    except (PublishError, OSError, ValueError, NotAllowed, StoreUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    return 0
