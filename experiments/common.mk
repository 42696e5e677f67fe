# Shared by experiments/*/Makefile: the shell, the resume rule of a step's
# partial output, the report formats. Include after BUILD is set.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DELETE_ON_ERROR:

KBSYNTH   = $(BUILD)/tools/kbsynth/kbsynth
KBROLLOUT = $(BUILD)/tools/kbrollout/kbrollout
KBTRAIN   = $(BUILD)/tools/kbtrain/kbtrain
KBREWARD  = $(BUILD)/tools/kbreward/kbreward

# The tools are order-only prerequisites of the steps that run them: a tool
# that is not built stops make before its step (exit 2), and rebuilding a tool
# does not redo finished steps.
$(KBSYNTH) $(KBROLLOUT) $(KBTRAIN) $(KBREWARD):
	@echo "$(EXPERIMENT): $@ is not built: build the tools (meson compile -C $(BUILD)) or set BUILD=DIR" >&2; exit 2

# $(call tree,DIRS): the folders under DIRS and every file in them
# (following links; Python's __pycache__ left out), as prerequisites: a
# task set or a model folder is an input of each step that reads it, so an
# edited file (a task.json, a model.py, a weight file), an added one (its
# folder's mtime changes) or a removed one (likewise) remakes that step.
# Evaluated when make reads the Makefile: use it only for inputs no rule
# makes (the synthesised tasks are represented by their manifest instead).
tree = $(if $1,$(shell find -L $1 -name __pycache__ -prune -o \( -type f -o -type d \) -print 2>/dev/null | LC_ALL=C sort))

# $(call q,TEXT): TEXT as one single-quoted shell word.
q = '$(subst ','\'',$1)'

# $(call partial,PART,COMMAND,INPUTS,ALSO,WITNESS): keep PART, the output of
# an interrupted step that its tool resumes, only when WITNESS (default PART:
# the file that makes PART resumable) exists, PART.cmd holds the same COMMAND
# and no file of INPUTS is newer than PART; otherwise remove PART and ALSO.
# Then record COMMAND in PART.cmd (removed when the step completes).
partial = if [ -e $(or $5,$1) ] && [ "$$(cat $1.cmd 2>/dev/null)" = $(call q,$2) ] \
            && $(if $3,[ -z "$$(find $3 -prune -newer $1)" ],true); then \
            echo "$(EXPERIMENT): resuming the interrupted $(notdir $1)"; \
          else rm -rf $1 $4; fi; \
          printf '%s\n' $(call q,$2) > $1.cmd

# $(call complete,TRAJECTORIES,TASKS,SAMPLES): fail unless the kbrollout
# output TRAJECTORIES holds, for each task (a folder holding model.py) of
# TASKS times SAMPLES, a rollout whose last record is not infra_error.
# kbrollout exits 0 when some rollouts ended in an infrastructure fault
# (recorded as infra_error, or not written); the step then stays unfinished,
# and the next make resumes the partial output, which redoes just those.
complete = want=$$(( $$(find -L $2 -name model.py | wc -l) * $3 )); \
  got=$$(jq -s 'reduce .[] as $$r ({}; .[$$r.rollout_id] = $$r.status) | map(select(. != "infra_error")) | length' $1); \
  [ "$$got" -ge "$$want" ] || { echo "$(EXPERIMENT): $$got of $$want rollouts complete, the others ended in an infrastructure fault: run make again to redo them" >&2; exit 1; }

# kbreward report's --format for each report file's extension.
report_format = $(if $(filter txt,$1),text,$(if $(filter md,$1),markdown,$1))
