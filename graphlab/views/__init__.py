"""Views: figures and the explorer widget. They read sizing results and benchmark frames; they
never run a model (no torch). May import `graphlab.sizing` and `graphlab.errors`.
"""
