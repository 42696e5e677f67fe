# The tail both experiments share, included last (after REPORTS,
# REPORT_INPUT, REPORT_ARGS and TITLE are set): kbreward's reports of
# REPORT_INPUT, one atomic file per format, and the show / clean targets.

$(REPORTS): $(OUT)/report.%: $(REPORT_INPUT) | $(KBREWARD)
	$(KBREWARD) report $(REPORT_INPUT) --format $(call report_format,$*) --title $(call q,$(TITLE)) $(REPORT_ARGS) -o $@.part
	@mv $@.part $@
	$(if $(filter txt,$*),@cat $@)

show: $(OUT)/report.txt
	@cat $<

clean:
	rm -rf $(OUT)
