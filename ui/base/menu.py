"""The menu: the pages of app.py's sidebar by section, as (key: the file name in pages/, title, icon).
A role's pages are lab.roles.PAGE_ROLES; the sign-in refuses a page by its key and names it by its title."""

# the app's menu: (file in pages/, title, icon) by section; the file name is the page's key in
# lab.roles.PAGE_ROLES and its address (app.py draws the entries the actor may open)
MENU = {
    "Data": [
        ("home", "Datasets", "dataset"),
        ("pairs", "Pairs", "manage_search"),
        ("import_pairs", "Import", "upload_file"),
        ("export", "Export", "download"),
    ],
    "Metric": [("scoring", "Scoring", "speed")],
    "Labelling": [
        ("campaigns", "Campaigns", "label"),
        ("review", "Review", "gavel"),
        ("live_campaign", "Live campaign", "monitoring"),
    ],
    "Analysis": [
        ("agreement", "Agreement", "groups"),
        ("thresholds", "Thresholds", "tune"),
        ("distributions", "Distributions", "bar_chart"),
        ("disagreements", "Disagreements", "compare_arrows"),
        ("scorecard", "Scorecard", "scoreboard"),
        ("correlation", "Correlation", "scatter_plot"),
        ("preferences", "Preferences", "thumbs_up_down"),
    ],
    "Team": [("accounts", "Accounts", "manage_accounts"), ("api_access", "API & webhooks", "api")],
}
TITLES = {key: title for entries in MENU.values() for key, title, _ in entries}
