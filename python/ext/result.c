/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A pmugate_result as plain Python objects: lists of floats per row, which pmugate/_result.py
 * turns into numpy arrays (one list per row costs less than an array per value from C)
 */
#include "pymodule.h"

#include <stdint.h>

static PyObject *double_list(const double *v, size_t n) {
        PyObject *l = PyList_New((Py_ssize_t) n);

        for (size_t i = 0; l && i < n; i++) {
                PyObject *x = PyFloat_FromDouble(v[i]);

                if (!x) {
                        Py_CLEAR(l);
                        break;
                }
                PyList_SET_ITEM(l, (Py_ssize_t) i, x);
        }
        return l;
}

static PyObject *u64_list(const uint64_t *v, size_t n) {
        PyObject *l = PyList_New((Py_ssize_t) n);

        for (size_t i = 0; l && i < n; i++) {
                PyObject *x = PyLong_FromUnsignedLongLong(v[i]);

                if (!x) {
                        Py_CLEAR(l);
                        break;
                }
                PyList_SET_ITEM(l, (Py_ssize_t) i, x);
        }
        return l;
}

static PyObject *string_list(const char *const *v, size_t n) {
        PyObject *l = PyList_New((Py_ssize_t) n);

        for (size_t i = 0; l && i < n; i++) {
                PyObject *x = PyUnicode_FromString(v && v[i] ? v[i] : "");

                if (!x) {
                        Py_CLEAR(l);
                        break;
                }
                PyList_SET_ITEM(l, (Py_ssize_t) i, x);
        }
        return l;
}

static PyObject *values_dict(const pmugate_result *r, const pmugate_values *v) {
        PyObject *counts = double_list(v->counts, r->n_events);
        PyObject *raw = u64_list(v->raw, r->n_events);
        PyObject *scale = double_list(v->scale, r->n_events);
        PyObject *metrics = double_list(v->metrics, r->n_metrics);
        long long cpu = v->cpu == UINT32_MAX ? -1LL : (long long) v->cpu;

        if (!counts || !raw || !scale || !metrics) {
                Py_XDECREF(counts);
                Py_XDECREF(raw);
                Py_XDECREF(scale);
                Py_XDECREF(metrics);
                return NULL;
        }
        /* N: the dict takes the references */
        return Py_BuildValue("{s:L,s:i,s:N,s:N,s:N,s:N}", "cpu", cpu, "package", v->package, "counts",
                             counts, "raw", raw, "scale", scale, "metrics", metrics);
}

static PyObject *rows(const pmugate_result *r, const pmugate_values *v, size_t n) {
        PyObject *l = PyList_New((Py_ssize_t) n);

        for (size_t i = 0; l && i < n; i++) {
                PyObject *d = values_dict(r, &v[i]);

                if (!d) {
                        Py_CLEAR(l);
                        break;
                }
                PyList_SET_ITEM(l, (Py_ssize_t) i, d);
        }
        return l;
}

static PyObject *metric_infos(const pmugate_result *r) {
        PyObject *l = PyList_New((Py_ssize_t) r->n_metrics);

        for (size_t i = 0; l && i < r->n_metrics; i++) {
                const pmugate_metric_info *m = &r->metrics[i];
                PyObject *d = Py_BuildValue("{s:s,s:s,s:i,s:I,s:s}", "name", m->name, "label",
                                            m->label ?: "", "parent", m->parent, "level", m->level, "unit",
                                            m->unit ?: "");

                if (!d) {
                        Py_CLEAR(l);
                        break;
                }
                PyList_SET_ITEM(l, (Py_ssize_t) i, d);
        }
        return l;
}

PyObject *pyresult_to_dict(const pmugate_result *r) {
        /* N: the dict takes the references; a NULL among them fails the whole */
        return Py_BuildValue("{s:d,s:d,s:d,s:s,s:K,s:K,s:I,s:N,s:N,s:N,s:N,s:N,s:N,s:s}",
                             "start", r->start,
                             "elapsed", r->elapsed,
                             "window", r->window,
                             "window_clock", r->window_clock ?: "client",
                             "samples", (unsigned long long) r->samples,
                             "resets", (unsigned long long) r->resets,
                             "event_sets", r->event_sets,
                             "events", string_list(r->events, r->n_events),
                             "event_units", string_list(r->event_units, r->n_events),
                             "metrics", metric_infos(r),
                             "per_cpu", rows(r, r->cpus, r->n_cpus),
                             "aggregate", values_dict(r, &r->aggregate),
                             "per_package", rows(r, r->packages, r->n_packages),
                             "withheld", r->withheld ?: "");
}
