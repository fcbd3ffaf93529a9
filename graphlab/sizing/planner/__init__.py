"""The capture-size planner: which sizes a vLLM V1 deployment should capture (`plan`), for a
workload read from CSVs (`inputs`) or a vLLM log (`log_plan`), by an exact interval programme
(`optimum`), priced beside the engine's default (`result`, `compare`). Part of the sizing layer:
torch-free, it imports the rest of graphlab.sizing and graphlab.errors only."""
