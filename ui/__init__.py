"""Streamlit helpers shared by the pages: session state and share links (`state`), the page frame
(`chrome`), input widgets (`form`) and the estimate outputs (`results`). The math lives in `estimator`."""
