"""How the papers judge a metric, one module per family of evaluation (pure functions, no
Streamlit, no database): ``paraphrasus`` (the PARAPHRASUS scorecard, Michail et al., COLING 2025)."""
