/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: group files (good, bad, includes, search order), the shipped TopDown groups, and
 * a lint of every shipped group file: each reported metric has a unit from the known list.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "events/events.h"
#include "events/groups.h"
#include "events/metrics.h"

static char dir[64];
static char shipped[4096];

static void write_file(const char *rel, const char *text) {
        char path[256];
        FILE *f;

        (void) snprintf(path, sizeof(path), "%s/%s", dir, rel);
        f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
}

static int setup(void **state) {
        char sub[sizeof(dir) + sizeof(shipped) + 8];
        const char *src = getenv("PMUGATE_SOURCE_DIR");

        (void) state;
        (void) snprintf(dir, sizeof(dir), "/tmp/pmugate-groups-XXXXXX");
        if (!mkdtemp(dir))
                return -1;
        (void) snprintf(sub, sizeof(sub), "%s/spr", dir);
        if (mkdir(sub, 0755) < 0)
                return -1;
        (void) snprintf(shipped, sizeof(shipped), "%s/client/groups", src ?: ".");
        /* the test directory first, the shipped groups after it */
        (void) snprintf(sub, sizeof(sub), "%s:%s", dir, shipped);
        return setenv("PMUGATE_GROUP_PATH", sub, 1);
}

static int teardown(void **state) {
        char cmd[128];

        (void) state;
        (void) snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        return system(cmd) == 0 ? 0 : -1;
}

static void test_good_file(void **state) {
        Group *g = NULL;
        char reason[512];

        (void) state;
        write_file("spr/base.conf",
                   "[group]\n"
                   "description = base\n"
                   "events = TOPDOWN.SLOTS topdown-retiring\n"
                   "[metric ret]\n"
                   "label = Retiring\n"
                   "unit = %\n"
                   "formula = topdown_retiring / TOPDOWN.SLOTS\n");
        write_file("spr/mine.conf",
                   "# a comment\n"
                   "[group]\n"
                   "description = mine,\n"
                   "  continued\n"
                   "include = base\n"
                   "events = INST_RETIRED.ANY, CPU_CLK_UNHALTED.THREAD\n"
                   "         UOPS_RETIRED.SLOTS\n"
                   "[events if SMT_on && core_wide]\n"
                   "events = CPU_CLK_UNHALTED.ONE_THREAD_ACTIVE\n"
                   "[helper clks]\n"
                   "formula = CPU_CLK_UNHALTED.THREAD\n"
                   "[metric ipc]\n"
                   "label = IPC   ; inline comment\n"
                   "parent = ret\n"
                   "formula = INST_RETIRED.ANY\n"
                   "          / clks\n");
        assert_int_equal(group_load("mine", "spr", &g, reason, sizeof(reason)), 0);
        assert_string_equal(g->name, "mine");
        assert_string_equal(g->description, "mine, continued");
        assert_int_equal(g->n_events, 6);
        assert_string_equal(g->events[0].name, "TOPDOWN.SLOTS");
        assert_string_equal(g->events[4].name, "UOPS_RETIRED.SLOTS");
        assert_null(g->events[4].condition);
        assert_string_equal(g->events[5].condition, "SMT_on && core_wide");
        assert_int_equal(g->n_metrics, 3);
        assert_string_equal(g->metrics[0].name, "ret");
        assert_string_equal(g->metrics[0].unit, "%");
        assert_true(g->metrics[1].helper);
        assert_string_equal(g->metrics[2].parent, "ret");
        assert_string_equal(g->metrics[2].label, "IPC");
        assert_string_equal(g->metrics[2].formula, "INST_RETIRED.ANY / clks");
        group_free(g);
}

static void expect_error(const char *text, const char *expected, int error) {
        Group *g = NULL;
        char reason[512] = "";

        write_file("spr/bad.conf", text);
        assert_int_equal(group_load("bad", "spr", &g, reason, sizeof(reason)), error);
        if (!strstr(reason, expected))
                fail_msg("reason '%s' lacks '%s'", reason, expected);
        assert_null(g);
}

static void test_bad_files(void **state) {
        (void) state;
        expect_error("[group]\nevents = A\ncolour = red\n", "bad.conf:3: unknown key 'colour'", -EINVAL);
        expect_error("[group]\nevents = A\n[stuff]\nx = 1\n", "unknown section [stuff]", -EINVAL);
        expect_error("events = A\n", "outside a section", -EINVAL);
        expect_error("[group]\nevents = A\n[metric m]\nlabel = M\n", "'m' needs a formula", -EINVAL);
        expect_error("[group]\n[metric m]\nunavailable = no way\nformula = 1\n", "(not both)", -EINVAL);
        expect_error("[group]\n[helper h]\nthreshold = h > 1\nformula = 1\n", "a helper has only", -EINVAL);
        expect_error("[group]\n[metric m]\nestimate = a\nestimate = b\nformula = 1\n", "estimate of 'm'", -EINVAL);
        expect_error("[group]\n[metric m]\nparent = nope\nformula = 1\n", "parent 'nope' of 'm'", -EINVAL);
        expect_error("[group]\n[helper h]\nlabel = H\nformula = 1\n", "a helper has only a formula", -EINVAL);
        expect_error("[group]\n[metric m]\nformula = 1\n[metric n]\nformula = 2\n[metric m]\nformula = 3\n",
                     "[metric m] is defined twice", -EINVAL);
        expect_error("[group]\nthis line has no equals sign\n", "bad.conf:2", -EINVAL);
        expect_error("[group]\nmodels = skx icx\nevents = A\n", "not for CPU model spr", -EOPNOTSUPP);
        expect_error("[group]\ninclude = bad\n", "nest deeper", -EINVAL);
        expect_error("[group]\ninclude = missing\n", "include missing: no group 'missing'", -EINVAL);
        expect_error("[metric m]\nformula = 1\nunit = a very long unit name\n", "unit of 'm'", -EINVAL);
}

/* perf's MetricThreshold, estimates, nodes pmugate cannot compute, and an included helper
 * reported by the including group (the TopDown level-3 files) */
static void test_tma_keys(void **state) {
        Group *g = NULL;
        char reason[512] = "";

        (void) state;
        write_file("spr/tbase.conf",
                   "[group]\n"
                   "events = TOPDOWN.SLOTS\n"
                   "[helper seq]\n"
                   "formula = TOPDOWN.SLOTS / 2\n");
        write_file("spr/tree.conf",
                   "[group]\n"
                   "include = tbase\n"
                   "[metric seq]\n"
                   "label = Sequencer\n"
                   "unit = %\n"
                   "threshold = seq > 0.05\n"
                   "[metric lat]\n"
                   "parent = seq\n"
                   "estimate = retire-latency\n"
                   "threshold = lat > 0.1 &&\n"
                   "            seq > 0.05\n"
                   "formula = TOPDOWN.SLOTS * 137\n"
                   "[metric sharing]\n"
                   "unavailable = uses an offcore-response event\n"
                   "[helper gone]\n"
                   "unavailable = needs the TSC\n");
        assert_int_equal(group_load("tree", "spr", &g, reason, sizeof(reason)), 0);
        assert_int_equal(g->n_metrics, 4);
        assert_string_equal(g->metrics[0].name, "seq");
        assert_false(g->metrics[0].helper);
        assert_string_equal(g->metrics[0].label, "Sequencer");
        assert_string_equal(g->metrics[0].formula, "TOPDOWN.SLOTS / 2");
        assert_string_equal(g->metrics[0].threshold, "seq > 0.05");
        assert_null(g->metrics[0].estimate);
        assert_string_equal(g->metrics[1].threshold, "lat > 0.1 && seq > 0.05");
        assert_string_equal(g->metrics[1].estimate, "retire-latency");
        assert_string_equal(g->metrics[2].unavailable, "uses an offcore-response event");
        /* never a number: NaN, shown as n/a with the reason */
        assert_string_equal(g->metrics[2].formula, "0 / 0");
        assert_true(g->metrics[3].helper);
        assert_string_equal(g->metrics[3].unavailable, "needs the TSC");
        group_free(g);

        write_file("spr/bad.conf", "[group]\ninclude = tbase\n[metric seq]\nformula = 1\n");
        assert_int_equal(group_load("bad", "spr", &g, reason, sizeof(reason)), -EINVAL);
        if (!strstr(reason, "'seq' has its formula in the group that defines it"))
                fail_msg("reason: %s", reason);
        write_file("spr/bad.conf", "[group]\ninclude = tbase\n[helper seq]\nformula = 1\n");
        assert_int_equal(group_load("bad", "spr", &g, reason, sizeof(reason)), -EINVAL);
        if (!strstr(reason, "[helper seq] is defined twice"))
                fail_msg("reason: %s", reason);
}

static void test_limits_and_names(void **state) {
        char text[8192] = "[group]\n", reason[512];
        Group *g = NULL;

        (void) state;
        for (unsigned i = 0; i <= GROUP_EVENTS_MAX; i++) {
                char line[64];

                (void) snprintf(line, sizeof(line), "events = E%u\n", i);
                strcat(text, line);
        }
        write_file("spr/many.conf", text);
        assert_int_equal(group_load("many", "spr", &g, reason, sizeof(reason)), -EINVAL);
        assert_non_null(strstr(reason, "more than"));
        assert_int_equal(group_load("../etc", "spr", &g, reason, sizeof(reason)), -EINVAL);
        assert_int_equal(group_load("", "spr", &g, reason, sizeof(reason)), -EINVAL);
        assert_int_equal(group_load("no-such-group", "spr", &g, reason, sizeof(reason)), -ENOENT);
        assert_non_null(strstr(reason, "no-such-group"));
        assert_false(group_name_valid(".hidden"));
        assert_true(group_name_valid("topdown-l2"));
}

static void test_search_order(void **state) {
        Group *g = NULL;
        char reason[512];

        (void) state;
        /* a model-independent user group, and a user override of a shipped one */
        write_file("portable.conf", "[group]\ndescription = top level\nmodels = spr icx\nevents = A\n");
        write_file("spr/topdown-l1.conf", "[group]\ndescription = user override\nevents = A\n");
        assert_int_equal(group_load("portable", "spr", &g, reason, sizeof(reason)), 0);
        assert_string_equal(g->description, "top level");
        g = group_free(g);
        assert_int_equal(group_load("topdown-l1", "spr", &g, reason, sizeof(reason)), 0);
        assert_string_equal(g->description, "user override");
        g = group_free(g);
        /* the shipped one where the user has none */
        assert_int_equal(group_load("topdown-l1", "icx", &g, reason, sizeof(reason)), 0);
        assert_non_null(strstr(g->path, shipped));
        group_free(g);
}

/* The shipped groups of every model parse, and every formula compiles against the group's
 * events, their core sums and the constants. */
static void test_shipped_groups(void **state) {
        static const char *const models[] = { "skx", "clx", "icx", "spr" };
        static const char *const names[] = { "topdown-l1", "topdown-l2", "ipc" };
        char path[4200];

        (void) state;
        (void) snprintf(path, sizeof(path), "%s", shipped);
        assert_int_equal(setenv("PMUGATE_GROUP_PATH", path, 1), 0);
        for (size_t m = 0; m < ELEMENTSOF(models); m++)
                for (size_t n = 0; n < ELEMENTSOF(names); n++) {
                        MetricSet *s = NULL;
                        Group *g = NULL;
                        char reason[512] = "";
                        size_t reported = 0;

                        if (group_load(names[n], models[m], &g, reason, sizeof(reason)) < 0)
                                fail_msg("%s for %s: %s", names[n], models[m], reason);
                        assert_int_equal(metric_set_new(&s), 0);
                        assert_true(metric_set_add_variable(s, "SMT_on") >= 0);
                        assert_true(metric_set_add_variable(s, "core_wide") >= 0);
                        assert_true(metric_set_add_variable(s, "slots_width") >= 0);
                        assert_true(metric_set_add_variable(s, "duration_time") >= 0);
                        for (size_t e = 0; e < g->n_events; e++) {
                                char var[EVENT_NAME_MAX], core[EVENT_NAME_MAX + 8];
                                EventDesc d;

                                if (event_resolve(models[m], g->events[e].name, &d, reason, sizeof(reason)) < 0)
                                        fail_msg("%s for %s: %s", names[n], models[m], reason);
                                assert_int_equal(event_variable_name(g->events[e].name, var, sizeof(var)), 0);
                                (void) snprintf(core, sizeof(core), "core.%s", var);
                                assert_true(metric_set_add_variable(s, var) >= 0);
                                assert_true(metric_set_add_variable(s, core) >= 0);
                        }
                        for (size_t k = 0; k < g->n_metrics; k++) {
                                assert_true(metric_set_add_formula(s, g->metrics[k].name, g->metrics[k].formula,
                                                                   reason, sizeof(reason)) >= 0);
                                if (!g->metrics[k].helper)
                                        reported++;
                        }
                        if (metric_set_compile(s, reason, sizeof(reason)) < 0)
                                fail_msg("%s for %s: %s", names[n], models[m], reason);
                        if (strcmp(names[n], "topdown-l1") == 0)
                                assert_int_equal(reported, 4);
                        if (strcmp(names[n], "topdown-l2") == 0)
                                assert_int_equal(reported, 12);
                        metric_set_free(s);
                        group_free(g);
                }
}

/* The units a shipped metric may have (docs/GROUPS.md, "Units"): programs reading CSV and JSON
 * (pmugate plot, notebooks, dashboards) convert and group by these strings, so a new one is
 * added here and in the documentation, not spelled anew in a group file. */
static const char *const known_units[] = {
        "%", "s", "J", "W", "MHz", "x nominal",
        "MBytes/s", "GBytes", "MFLOP/s", "MUOPS/s",
        "insn/cycle", "cycles/insn", "cycles", "per insn", "insn/branch", "loads/store",
        "FLOP/cycle", "FLOP/insn", "FLOP/Byte",
};

static bool unit_known(const char *unit) {
        for (size_t i = 0; i < ELEMENTSOF(known_units); i++)
                if (strcmp(unit, known_units[i]) == 0)
                        return true;
        return false;
}

/* Loads path (group name: the file's name without .conf) for the first model it is for and
 * checks its metrics' units; returns how many metrics it checked. */
static size_t lint_units(const char *path, const char *file, const char *subdir) {
        static const char *const models[] = { "skx", "clx", "icx", "spr", "emr", "gnr", "srf", "zen4", "zen5", "grace" };
        char name[GROUP_NAME_MAX], reason[512] = "";
        size_t checked = 0;
        Group *g = NULL;
        int r = -EOPNOTSUPP;

        assert_true(strlen(file) > strlen(".conf") && strlen(file) - strlen(".conf") < sizeof(name));
        (void) snprintf(name, sizeof(name), "%.*s", (int) (strlen(file) - strlen(".conf")), file);
        for (size_t m = 0; m < ELEMENTSOF(models) && r == -EOPNOTSUPP; m++)
                if (!subdir || strcmp(subdir, models[m]) == 0)
                        r = group_load_file(path, name, models[m], &g, reason, sizeof(reason));
        if (r < 0)
                fail_msg("%s: %s", path, reason[0] ? reason : "for no known model");
        for (size_t k = 0; k < g->n_metrics; k++) {
                const GroupMetric *mi = &g->metrics[k];

                if (mi->helper)
                        continue;
                if (!mi->unit || !unit_known(mi->unit))
                        fail_msg("%s: metric %s has %s%s%s; give it one of the known units (docs/GROUPS.md)",
                                 path, mi->name, mi->unit ? "the unknown unit '" : "no unit",
                                 mi->unit ?: "", mi->unit ? "'" : "");
                checked++;
        }
        group_free(g);
        return checked;
}

static bool model_known(const char *key) {
        static const char *const models[] = { "skx", "clx", "icx", "spr", "emr", "gnr", "srf", "zen4", "zen5", "grace" };

        for (size_t m = 0; m < ELEMENTSOF(models); m++)
                if (strcmp(key, models[m]) == 0)
                        return true;
        return false;
}

static size_t lint_dir(const char *path, const char *subdir, size_t *ret_files) {
        size_t checked = 0;
        struct dirent *de;
        DIR *d = opendir(path);

        assert_non_null(d);
        while ((de = readdir(d))) {
                char child[4400];
                struct stat st;

                if (de->d_name[0] == '.')
                        continue;
                (void) snprintf(child, sizeof(child), "%s/%s", path, de->d_name);
                /* clx's TopDown files are links to skx's: checked as clx's own */
                assert_int_equal(stat(child, &st), 0);
                /* a folder of a model no table knows (yet): test_gen_topdown.py checks what the
                 * generator writes ahead of a model */
                if (S_ISDIR(st.st_mode) && !subdir && !model_known(de->d_name))
                        continue;
                if (S_ISDIR(st.st_mode) && !subdir)
                        checked += lint_dir(child, de->d_name, ret_files);
                else if (S_ISREG(st.st_mode) && strlen(de->d_name) > 5 &&
                         strcmp(de->d_name + strlen(de->d_name) - 5, ".conf") == 0) {
                        checked += lint_units(child, de->d_name, subdir);
                        (*ret_files)++;
                }
        }
        closedir(d);
        return checked;
}

/* Every shipped group file, at the top and under each model: every metric it reports carries
 * a unit from the known list, so that no CSV column reads an empty unit. */
static void test_shipped_units(void **state) {
        size_t files = 0, metrics;

        (void) state;
        assert_int_equal(setenv("PMUGATE_GROUP_PATH", shipped, 1), 0);
        metrics = lint_dir(shipped, NULL, &files);
        /* the walk found the tree: 13 files at the top, 3 per Intel model, 10 per AMD one */
        assert_true(files >= 45);
        assert_true(metrics >= 200);
        assert_true(unit_known("%") && !unit_known("") && !unit_known("MB/s"));
}

/* The generated TopDown levels 3 and 4 (contrib/tma/gen-topdown.py) load on the models that
 * have them, name only events pmugate resolves, and every formula and threshold compiles. */
static void test_shipped_deep_groups(void **state) {
        static const char *const models[] = { "icx", "spr" };
        static const char *const names[] = { "topdown-l3", "topdown-l4" };
        char path[4200];

        (void) state;
        (void) snprintf(path, sizeof(path), "%s", shipped);
        assert_int_equal(setenv("PMUGATE_GROUP_PATH", path, 1), 0);
        for (size_t m = 0; m < ELEMENTSOF(models); m++)
                for (size_t n = 0; n < ELEMENTSOF(names); n++) {
                        MetricSet *s = NULL;
                        Group *g = NULL;
                        char reason[512] = "";
                        size_t reported = 0, thresholds = 0;

                        if (group_load(names[n], models[m], &g, reason, sizeof(reason)) < 0)
                                fail_msg("%s for %s: %s", names[n], models[m], reason);
                        assert_true(g->n_events <= GROUP_EVENTS_MAX);
                        assert_int_equal(metric_set_new(&s), 0);
                        assert_true(metric_set_add_variable(s, "SMT_on") >= 0);
                        assert_true(metric_set_add_variable(s, "core_wide") >= 0);
                        assert_true(metric_set_add_variable(s, "slots_width") >= 0);
                        assert_true(metric_set_add_variable(s, "duration_time") >= 0);
                        for (size_t e = 0; e < g->n_events; e++) {
                                char var[EVENT_NAME_MAX], core[EVENT_NAME_MAX + 8];

                                /* the events resolve through libpfm4's list of the model, which a
                                 * process activates for one model only: test_topdown_deep.py
                                 * measures them through the CLI */
                                assert_int_equal(event_variable_name(g->events[e].name, var, sizeof(var)), 0);
                                (void) snprintf(core, sizeof(core), "core.%s", var);
                                if (metric_set_variable_index(s, var) >= 0)
                                        continue;
                                assert_true(metric_set_add_variable(s, var) >= 0);
                                assert_true(metric_set_add_variable(s, core) >= 0);
                        }
                        for (size_t k = 0; k < g->n_metrics; k++) {
                                char tname[METRIC_NAME_MAX + 16];

                                if (metric_set_add_formula(s, g->metrics[k].name, g->metrics[k].formula, reason,
                                                           sizeof(reason)) < 0)
                                        fail_msg("%s for %s: %s", names[n], models[m], reason);
                                if (g->metrics[k].threshold) {
                                        (void) snprintf(tname, sizeof(tname), "%s.threshold", g->metrics[k].name);
                                        assert_true(metric_set_add_formula(s, tname, g->metrics[k].threshold, reason,
                                                                           sizeof(reason)) >= 0);
                                        thresholds++;
                                }
                                if (!g->metrics[k].helper)
                                        reported++;
                        }
                        if (metric_set_compile(s, reason, sizeof(reason)) < 0)
                                fail_msg("%s for %s: %s", names[n], models[m], reason);
                        /* levels 1-2 and perf's level-3 (and -4) nodes: icx 26 + 41, spr 29 + 45 */
                        if (strcmp(names[n], "topdown-l3") == 0)
                                assert_int_equal(reported, 12 + (m == 0 ? 26 : 29));
                        else
                                assert_int_equal(reported, 12 + (m == 0 ? 26 + 41 : 29 + 45));
                        assert_int_equal(thresholds, reported - 12);
                        metric_set_free(s);
                        group_free(g);
                }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_good_file),
                cmocka_unit_test(test_bad_files),
                cmocka_unit_test(test_limits_and_names),
                cmocka_unit_test(test_search_order),
                cmocka_unit_test(test_tma_keys),
                cmocka_unit_test(test_shipped_groups),
                cmocka_unit_test(test_shipped_units),
                cmocka_unit_test(test_shipped_deep_groups),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
