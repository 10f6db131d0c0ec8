"""How the papers judge a metric, one module per family of evaluation (pure functions, no
Streamlit, no database): ``paraphrasus`` (the PARAPHRASUS scorecard, Michail et al., COLING 2025),
``correlation`` (Pearson, Spearman and Kendall against graded human judgments, bootstrap intervals,
paired difference test, system level) and ``preference`` (agreement with human choices between two
candidates, *-PLUIE section 3.2)."""
