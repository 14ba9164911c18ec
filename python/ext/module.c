/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The _pmugate extension module: errors, the daemon's info, the group and event lists and the
 * marker API, over libpmugate (python/pmugate/ wraps it in the public pmugate module)
 */
#include "pymodule.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events/event-list.h"
#include "events/event-models.h"
#include "events/group-list.h"
#include "macro.h"
#include "pmugate-limits.h"
#include "pmugate/marker.h"

PyMODINIT_FUNC PyInit__pmugate(void);

PyObject *pyerr_pmugate(int r, pmugate *c, const char *reason, const char *what) {
        const pmugate_error *e = c ? pmugate_last_error(c) : NULL;
        const char *name = "", *text;
        PyObject *errors, *exc;

        if (e && e->code != 0) {
                name = e->name;
                text = e->reason;
        } else
                text = reason && reason[0] ? reason : pmugate_strerror(r);
        errors = PyImport_ImportModule("pmugate._errors");
        if (!errors)
                return NULL;
        exc = PyObject_CallMethod(errors, "from_errno", "isss", r < 0 ? -r : r, name, text, what);
        Py_DECREF(errors);
        if (!exc)
                return NULL;
        PyErr_SetObject((PyObject *) Py_TYPE(exc), exc);
        Py_DECREF(exc);
        return NULL;
}

int pyconnect(const char *socket_path, pmugate **ret) {
        char what[PMUGATE_REASON_MAX];
        int r;

        Py_BEGIN_ALLOW_THREADS
        r = pmugate_connect(socket_path, ret);
        Py_END_ALLOW_THREADS
        if (r < 0) {
                (void) snprintf(what, sizeof(what), "connecting to %.300s",
                                socket_path ?: getenv("PMUGATE_SOCKET") ?: PMUGATE_DEFAULT_SOCKET);
                pyerr_pmugate(r, NULL, NULL, what);
        }
        return r;
}

int pyhello(pmugate *c, pmugate_info **ret) {
        int r;

        Py_BEGIN_ALLOW_THREADS
        r = pmugate_hello(c, ret);
        Py_END_ALLOW_THREADS
        if (r < 0) {
                pyerr_pmugate(r, c, NULL, "hello");
                return r;
        }
        /* libpfm4 activates the host's PMU; resolve names for the daemon's model instead (as
         * the pmugate command, unless the user chose one) */
        if ((*ret)->model_key[0])
                (void) setenv("LIBPFM_FORCE_PMU", event_libpfm_pmu((*ret)->model_key) ?: (*ret)->model_key, 0);
        return 0;
}

static void pmugate_disconnectp(pmugate **c) {
        if (*c)
                *c = pmugate_disconnect(*c);
}

static void pmugate_info_freep(pmugate_info **i) {
        if (*i)
                *i = pmugate_info_free(*i);
}

static void py_decrefp(PyObject **o) {
        Py_XDECREF(*o);
}
#define _cleanup_py_ _cleanup_(py_decrefp)

static PyObject *u32_list(const uint32_t *v, size_t n) {
        PyObject *l = PyList_New((Py_ssize_t) n);

        for (size_t i = 0; l && i < n; i++) {
                PyObject *x = PyLong_FromUnsignedLong(v[i]);

                if (!x) {
                        Py_CLEAR(l);
                        break;
                }
                PyList_SET_ITEM(l, (Py_ssize_t) i, x);
        }
        return l;
}

static PyObject *cpus_list(const pmugate_info *info) {
        PyObject *l = PyList_New((Py_ssize_t) info->n_cpus);

        for (size_t i = 0; l && i < info->n_cpus; i++) {
                const pmugate_cpu *cpu = &info->cpus[i];
                PyObject *d = Py_BuildValue("{s:I,s:i,s:i,s:i,s:I,s:O,s:i}", "cpu", cpu->cpu, "package",
                                            cpu->package, "die", cpu->die, "core", cpu->core, "thread",
                                            cpu->thread, "online", cpu->online ? Py_True : Py_False, "ccx",
                                            cpu->ccx);
                if (!d) {
                        Py_CLEAR(l);
                        break;
                }
                PyList_SET_ITEM(l, (Py_ssize_t) i, d);
        }
        return l;
}

static PyObject *counters_list(const pmugate_info *info) {
        PyObject *l = PyList_New((Py_ssize_t) info->n_counters);

        for (size_t i = 0; l && i < info->n_counters; i++) {
                const pmugate_counter *k = &info->counters[i];
                PyObject *d = Py_BuildValue("{s:I,s:s,s:i,s:d,s:s,s:s}", "index", k->index, "name", k->name,
                                            "package", k->package, "scale", k->scale, "unit", k->unit,
                                            "error", k->error);
                if (!d) {
                        Py_CLEAR(l);
                        break;
                }
                PyList_SET_ITEM(l, (Py_ssize_t) i, d);
        }
        return l;
}

static PyObject *info_dict(const pmugate_info *i) {
        _cleanup_py_ PyObject *cpus = cpus_list(i), *scope = u32_list(i->scope_cpus, i->n_scope_cpus),
                              *counters = counters_list(i);

        if (!cpus || !scope || !counters)
                return NULL;
        return Py_BuildValue(
                "{s:s,s:I,s:s,s:O,s:s,s:s,s:I,s:I,s:I,s:s,s:s,s:s,s:O,s:I,s:I,s:I,s:I,s:O,"
                "s:{s:s,s:s,s:s,s:O},s:O,s:O,s:I,s:I,s:i,s:s,s:O,s:O,s:O,s:s,s:O,s:s,s:O,s:s}",
                "server", i->server, "protocol", i->protocol, "backend", i->backend, "simulated",
                i->simulated ? Py_True : Py_False, "mode", i->mode, "vendor", i->vendor, "family", i->family,
                "model", i->model, "stepping", i->stepping, "model_name", i->model_name, "model_key",
                i->model_key, "model_label", i->model_label, "has_pmu", i->has_pmu ? Py_True : Py_False,
                "pmu_version", i->pmu_version, "gp_counters", i->gp_counters, "fixed_counters",
                i->fixed_counters, "counter_width", i->counter_width, "nmi_watchdog",
                i->nmi_watchdog ? Py_True : Py_False,
                "counting", "via", i->counters_via, "wanted", i->counters_wanted, "reason",
                i->counters_reason, "msr_reads", i->msr_reads ? Py_True : Py_False,
                "cpus", cpus, "counters", counters, "uid", i->uid, "gid", i->gid, "pid", i->pid, "role",
                i->role, "may_read", i->may_read ? Py_True : Py_False, "may_write",
                i->may_write ? Py_True : Py_False, "may_admin", i->may_admin ? Py_True : Py_False,
                "rights_reason", i->rights_reason, "scoped", i->scoped ? Py_True : Py_False, "scope_job",
                i->scope_job, "scope_cpus", scope, "scope_reason", i->scope_reason);
}

static PyObject *py_info(PyObject *self, PyObject *args, PyObject *kwargs) {
        static char *kwlist[] = { "socket", NULL };
        _cleanup_(pmugate_disconnectp) pmugate *c = NULL;
        _cleanup_(pmugate_info_freep) pmugate_info *info = NULL;
        const char *socket_path = NULL;

        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|z", kwlist, &socket_path))
                return NULL;
        if (pyconnect(socket_path, &c) < 0 || pyhello(c, &info) < 0)
                return NULL;
        return info_dict(info);
}

typedef struct ListWalk {
        PyObject *list;
        PyObject *skipped;      /* [(path, reason)] of group files that did not parse */
} ListWalk;

static int append_new(PyObject *list, PyObject *item) {
        int r;

        if (!item)
                return -ENOMEM;
        r = PyList_Append(list, item);
        Py_DECREF(item);
        return r < 0 ? -ENOMEM : 0;
}

static int add_group(const Group *g, void *userdata) {
        ListWalk *w = userdata;
        _cleanup_py_ PyObject *metrics = PyList_New(0);

        if (!metrics)
                return -ENOMEM;
        for (size_t i = 0; i < g->n_metrics; i++) {
                const GroupMetric *m = &g->metrics[i];

                if (m->helper)
                        continue;
                if (append_new(metrics, Py_BuildValue("{s:s,s:s,s:z,s:s}", "name", m->name, "label",
                                                      m->label ?: "", "parent", m->parent, "unit",
                                                      m->unit ?: "")) < 0)
                        return -ENOMEM;
        }
        return append_new(w->list, Py_BuildValue("{s:s,s:s,s:s,s:O}", "name", g->name, "description",
                                                 g->description ?: "", "path", g->path ?: "", "metrics",
                                                 metrics));
}

static void skip_group(const char *path, const char *reason, void *userdata) {
        ListWalk *w = userdata;

        (void) append_new(w->skipped, Py_BuildValue("(ss)", path, reason));
}

static PyObject *list_result(int r, ListWalk *w) {
        if (r < 0 || PyErr_Occurred()) {
                Py_XDECREF(w->list);
                Py_XDECREF(w->skipped);
                return PyErr_Occurred() ? NULL : pyerr_pmugate(r, NULL, NULL, "listing");
        }
        return Py_BuildValue("(NN)", w->list, w->skipped);
}

static PyObject *py_list_groups(PyObject *self, PyObject *args, PyObject *kwargs) {
        static char *kwlist[] = { "socket", NULL };
        _cleanup_(pmugate_disconnectp) pmugate *c = NULL;
        _cleanup_(pmugate_info_freep) pmugate_info *info = NULL;
        const char *socket_path = NULL;
        ListWalk w = {};

        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|z", kwlist, &socket_path))
                return NULL;
        if (pyconnect(socket_path, &c) < 0 || pyhello(c, &info) < 0)
                return NULL;
        w.list = PyList_New(0);
        w.skipped = PyList_New(0);
        if (!w.list || !w.skipped)
                return list_result(-ENOMEM, &w);
        return list_result(group_list(info->model_key, add_group, skip_group, &w), &w);
}

static int add_event(const char *name, const char *description, EventListSource source, void *userdata) {
        static const char *const sources[] = {
                [EVENT_LIST_GENERIC] = "generic",
                [EVENT_LIST_TABLE] = "table",
                [EVENT_LIST_LIBPFM] = "libpfm4",
        };
        ListWalk *w = userdata;

        return append_new(w->list, Py_BuildValue("{s:s,s:s,s:s}", "name", name, "description", description,
                                                 "source", (size_t) source < ELEMENTSOF(sources) ?
                                                 sources[source] : "other"));
}

static PyObject *py_list_events(PyObject *self, PyObject *args, PyObject *kwargs) {
        static char *kwlist[] = { "socket", NULL };
        _cleanup_(pmugate_disconnectp) pmugate *c = NULL;
        _cleanup_(pmugate_info_freep) pmugate_info *info = NULL;
        const char *socket_path = NULL;
        ListWalk w = {};

        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|z", kwlist, &socket_path))
                return NULL;
        if (pyconnect(socket_path, &c) < 0 || pyhello(c, &info) < 0)
                return NULL;
        if (!info->model_key[0]) {
                char reason[PMUGATE_REASON_MAX];

                (void) snprintf(reason, sizeof(reason), "pmugate knows no events of this CPU model (%s)",
                                info->model_name);
                return pyerr_pmugate(-EOPNOTSUPP, NULL, reason, "listing events");
        }
        w.list = PyList_New(0);
        w.skipped = PyList_New(0);
        if (!w.list || !w.skipped)
                return list_result(-ENOMEM, &w);
        return list_result(event_list(info->model_key, add_event, &w), &w);
}

/* ------------------------------------------------------------------ markers */

static PyObject *marker_status(int r, const char *what) {
        if (r < 0)
                return pyerr_pmugate(r, NULL, pmugate_marker_last_reason(), what);
        Py_RETURN_NONE;
}

static PyObject *py_marker_init(PyObject *self, PyObject *args) {
        unsigned flags = 0;
        int r;

        if (!PyArg_ParseTuple(args, "|I", &flags))
                return NULL;
        Py_BEGIN_ALLOW_THREADS
        r = pmugate_marker_init(flags);
        Py_END_ALLOW_THREADS
        return marker_status(r, "marker init");
}

static PyObject *py_marker_named(PyObject *args, int (*fn)(const char *), const char *what) {
        const char *name;
        char label[128];
        int r;

        if (!PyArg_ParseTuple(args, "s", &name))
                return NULL;
        Py_BEGIN_ALLOW_THREADS
        r = fn(name);
        Py_END_ALLOW_THREADS
        (void) snprintf(label, sizeof(label), "marker %s '%.100s'", what, name);
        return marker_status(r, label);
}

static PyObject *py_marker_start(PyObject *self, PyObject *args) {
        return py_marker_named(args, pmugate_marker_start, "start");
}

static PyObject *py_marker_stop(PyObject *self, PyObject *args) {
        return py_marker_named(args, pmugate_marker_stop, "stop");
}

static PyObject *py_marker_reset(PyObject *self, PyObject *args) {
        return py_marker_named(args, pmugate_marker_reset, "reset");
}

static PyObject *py_marker_register(PyObject *self, PyObject *args) {
        const char *name;
        unsigned flags = 0;

        if (!PyArg_ParseTuple(args, "s|I", &name, &flags))
                return NULL;
        return marker_status(pmugate_marker_register(name, flags), "marker register");
}

static PyObject *py_marker_get(PyObject *self, PyObject *args) {
        double counts[PMUGATE_PY_MARKER_COUNTS_MAX], seconds = 0;
        int n = (int) ELEMENTSOF(counts), calls = 0, r;
        const char *name;
        _cleanup_py_ PyObject *list = NULL;

        if (!PyArg_ParseTuple(args, "s", &name))
                return NULL;
        r = pmugate_marker_get(name, &n, counts, &seconds, &calls);
        if (r < 0)
                return marker_status(r, "marker get");
        list = PyList_New(0);
        if (!list)
                return NULL;
        for (int i = 0; i < n && i < (int) ELEMENTSOF(counts); i++)
                if (append_new(list, PyFloat_FromDouble(counts[i])) < 0)
                        return NULL;
        return Py_BuildValue("{s:O,s:d,s:i}", "counts", list, "seconds", seconds, "calls", calls);
}

static PyObject *py_marker_close(PyObject *self, PyObject *args) {
        int r;

        Py_BEGIN_ALLOW_THREADS
        r = pmugate_marker_close();
        Py_END_ALLOW_THREADS
        return marker_status(r, "marker close");
}

static PyObject *py_marker_active(PyObject *self, PyObject *args) {
        return PyBool_FromLong(pmugate_marker_active());
}

static PyObject *py_marker_read_mode(PyObject *self, PyObject *args) {
        return PyUnicode_FromString(pmugate_marker_read_mode());
}

static PyMethodDef module_methods[] = {
        { "info", (PyCFunction) (void (*)(void)) py_info, METH_VARARGS | METH_KEYWORDS,
          "info(socket=None): the daemon's hello as a dict" },
        { "list_groups", (PyCFunction) (void (*)(void)) py_list_groups, METH_VARARGS | METH_KEYWORDS,
          "list_groups(socket=None): ([group dicts], [(path, reason) of files skipped])" },
        { "list_events", (PyCFunction) (void (*)(void)) py_list_events, METH_VARARGS | METH_KEYWORDS,
          "list_events(socket=None): ([event dicts], [])" },
        { "marker_init", py_marker_init, METH_VARARGS, "pmugate_marker_init(flags)" },
        { "marker_register", py_marker_register, METH_VARARGS, "pmugate_marker_register(name, flags)" },
        { "marker_start", py_marker_start, METH_VARARGS, "pmugate_marker_start(name)" },
        { "marker_stop", py_marker_stop, METH_VARARGS, "pmugate_marker_stop(name)" },
        { "marker_reset", py_marker_reset, METH_VARARGS, "pmugate_marker_reset(name)" },
        { "marker_get", py_marker_get, METH_VARARGS, "pmugate_marker_get(name) as a dict" },
        { "marker_close", py_marker_close, METH_NOARGS, "pmugate_marker_close()" },
        { "marker_active", py_marker_active, METH_NOARGS, "pmugate_marker_active()" },
        { "marker_read_mode", py_marker_read_mode, METH_NOARGS, "pmugate_marker_read_mode()" },
        {}
};

static struct PyModuleDef module_def = {
        PyModuleDef_HEAD_INIT,
        .m_name = "pmugate._pmugate",
        .m_doc = "libpmugate for Python; use the pmugate module",
        .m_size = -1,
        .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__pmugate(void) {
        PyObject *m;

        if (PyType_Ready(&MeasurementType) < 0)
                return NULL;
        m = PyModule_Create(&module_def);
        if (!m)
                return NULL;
        if (PyModule_AddIntConstant(m, "MEASURE_USER", PMUGATE_MEASURE_USER) < 0 ||
            PyModule_AddIntConstant(m, "MEASURE_KERNEL", PMUGATE_MEASURE_KERNEL) < 0 ||
            PyModule_AddIntConstant(m, "MARKER_NESTING", PMUGATE_MARKER_NESTING) < 0 ||
            PyModule_AddIntConstant(m, "REGION_NESTED", PMUGATE_REGION_NESTED) < 0 ||
            PyModule_AddStringConstant(m, "DEFAULT_SOCKET", PMUGATE_DEFAULT_SOCKET) < 0) {
                Py_DECREF(m);
                return NULL;
        }
        Py_INCREF(&MeasurementType);
        if (PyModule_AddObject(m, "Measurement", (PyObject *) &MeasurementType) < 0) {
                Py_DECREF(&MeasurementType);
                Py_DECREF(m);
                return NULL;
        }
        return m;
}
