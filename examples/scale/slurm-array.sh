#!/bin/bash
# A SLURM array: 3 shards of the shipped suites, a shared response cache in Redis, each task's
# results in a folder of the run's own; then a job that merges them once every task has ended.
# SLURM sets SLURM_ARRAY_TASK_ID (0, 1, 2) and SLURM_ARRAY_TASK_COUNT (3) in each task, so no
# --ifbench-shard is needed, and SLURM_ARRAY_JOB_ID, the array's id: the run's id (the same in
# every task; `ifbench merge` refuses another run's file) and the name of its results folder.
#
#   mkdir -p results
#   jobid=$(sbatch --parsable slurm-array.sh | cut -d';' -f1)
#   sbatch --dependency=afterany:$jobid --job-name=ifbench-merge --output=results/merge-%j.out \
#     --wrap="cd results/$jobid && ifbench merge --out merged.json --expect 3 shard-*.json shard-*.partial.jsonl"
#
# afterany: the merge runs when the tasks have ended, however they ended. A task killed (scancel,
# past --time: SLURM sends SIGTERM, which stops pytest like Ctrl-C) leaves its journal,
# shard-N.partial.jsonl, instead of shard-N.json; the merge takes its finished instances from it
# and exits 1 naming what did not run (no journal, the usual case: the merge notes that the
# pattern matched no file). Run from a folder on the shared filesystem with the suites, in an
# environment with `pip install "pytest-ifbench[scale]"`; the Redis service is any Redis the
# compute nodes reach (ifbench-redis here). Keep --expect in step with --array.
#SBATCH --job-name=ifbench
#SBATCH --array=0-2             # one range (0-8:2 too): the shard is the task's place among its ids
#SBATCH --cpus-per-task=2
#SBATCH --time=04:00:00
#SBATCH --output=results/slurm-%A_%a.out   # SLURM creates no folder: mkdir -p results first

# OPENAI_API_KEY comes from the environment sbatch was called in (or a file you source here)
# exit 1 = some instances failed their checks: still a complete shard, so the task is COMPLETED (as
# one the split left empty, exiting 0); anything else (2 interrupted, 4 a usage error, 5 nothing
# selected) makes it FAILED.
pytest suites/ --model=openai/gpt-4o-mini -n 2 \
  --ifbench-shared-cache=redis://ifbench-redis:6379/0 \
  --ifbench-results="results/$SLURM_ARRAY_JOB_ID/shard-$SLURM_ARRAY_TASK_ID.json" --ifbench-summary= \
  --alluredir="results/$SLURM_ARRAY_JOB_ID/allure-results" || [ $? -eq 1 ]
