/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * _pmugate.Measurement: one pmugate_measure on a connection of its own, sampled by a thread
 * while the measured Python code runs, and its results as dicts of lists
 */
#include "pymodule.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "macro.h"
#include "pmugate-limits.h"

#define NSEC_PER_SEC UINT64_C(1000000000)

typedef struct Measurement {
        PyObject_HEAD
        pmugate *connection;
        pmugate_measure *measure;
        uint64_t interval_ns;           /* 0: no interval results */
        /* The sampling thread owns the connection between start and stop; lock guards the
         * measurement's accumulated state, which result() reads meanwhile, and what follows. */
        pthread_mutex_t lock;
        pthread_cond_t wake;
        pthread_t thread;
        bool locks_ready;
        bool thread_running;
        bool stopping;
        bool started;
        bool stopped;
        int sample_error;               /* negative errno of the sample that ended the thread */
        char sample_reason[PMUGATE_REASON_MAX];
        char sample_name[32];
        pmugate_result **intervals;
        size_t n_intervals;
        size_t intervals_capacity;
} Measurement;

static uint64_t now_ns(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

static int keep_interval(Measurement *self) {
        pmugate_result *r = NULL;
        int k;

        k = pmugate_measure_read(self->measure, PMUGATE_SPAN_INTERVAL, &r);
        if (k < 0)
                return k;
        if (self->n_intervals == self->intervals_capacity) {
                size_t capacity = self->intervals_capacity ? 2 * self->intervals_capacity : 64;
                pmugate_result **grown = realloc(self->intervals, capacity * sizeof(pmugate_result *));

                if (!grown) {
                        pmugate_result_free(r);
                        return -ENOMEM;
                }
                self->intervals = grown;
                self->intervals_capacity = capacity;
        }
        self->intervals[self->n_intervals++] = r;
        return 0;
}

/* Runs with the lock held; the caller owns the connection. */
static void note_sample_error(Measurement *self, int r) {
        const pmugate_error *e = pmugate_last_error(self->connection);

        self->sample_error = r;
        if (e && e->code != 0) {
                (void) snprintf(self->sample_name, sizeof(self->sample_name), "%s", e->name);
                (void) snprintf(self->sample_reason, sizeof(self->sample_reason), "%s", e->reason);
        } else
                (void) snprintf(self->sample_reason, sizeof(self->sample_reason), "%s",
                                pmugate_measure_last_reason(self->measure)[0] ?
                                pmugate_measure_last_reason(self->measure) : pmugate_strerror(r));
}

/* Samples at the measurement's poll interval, so that no counter wraps and PERF_METRICS stays
 * precise however long the Python block runs, and keeps an interval result every interval. */
static void *sampler(void *userdata) {
        Measurement *self = userdata;
        uint64_t poll = pmugate_measure_poll_interval(self->measure), now = now_ns();
        uint64_t next_poll = now + poll;
        uint64_t next_interval = self->interval_ns ? now + self->interval_ns : UINT64_MAX;

        pthread_mutex_lock(&self->lock);
        while (!self->stopping) {
                uint64_t until = MIN(next_poll, next_interval);
                struct timespec ts = { .tv_sec = (time_t) (until / NSEC_PER_SEC),
                                       .tv_nsec = (long) (until % NSEC_PER_SEC) };
                int r;

                if (pthread_cond_timedwait(&self->wake, &self->lock, &ts) != ETIMEDOUT)
                        continue;
                now = now_ns();
                if (now < next_poll && now < next_interval)
                        continue;
                r = pmugate_measure_sample(self->measure);
                if (r >= 0 && now >= next_interval)
                        r = keep_interval(self);
                if (r < 0) {
                        note_sample_error(self, r);
                        break;
                }
                next_poll = now + poll;
                while (next_interval <= now)
                        next_interval += self->interval_ns;
        }
        pthread_mutex_unlock(&self->lock);
        return NULL;
}

static int init_locks(Measurement *self) {
        pthread_condattr_t attr;
        int r;

        r = pthread_condattr_init(&attr);
        if (r != 0)
                return -r;
        /* the sampling thread's deadlines are CLOCK_MONOTONIC times */
        (void) pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        r = pthread_cond_init(&self->wake, &attr);
        (void) pthread_condattr_destroy(&attr);
        if (r != 0)
                return -r;
        r = pthread_mutex_init(&self->lock, NULL);
        if (r != 0) {
                (void) pthread_cond_destroy(&self->wake);
                return -r;
        }
        self->locks_ready = true;
        return 0;
}

/* The CPU numbers of a Python sequence, in a new array. */
static int parse_cpus(PyObject *seq, uint32_t **ret_cpus, size_t *ret_n) {
        PyObject *fast = PySequence_Fast(seq, "cpus must be a sequence of CPU numbers");
        uint32_t *cpus;
        Py_ssize_t n;

        if (!fast)
                return -EINVAL;
        n = PySequence_Fast_GET_SIZE(fast);
        if (n == 0 || n > PMUGATE_CPUS_MAX) {
                Py_DECREF(fast);
                PyErr_Format(PyExc_ValueError, "cpus must name 1 to %u CPUs", PMUGATE_CPUS_MAX);
                return -EINVAL;
        }
        cpus = calloc((size_t) n, sizeof(uint32_t));
        if (!cpus) {
                Py_DECREF(fast);
                PyErr_NoMemory();
                return -ENOMEM;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
                unsigned long v = PyLong_AsUnsignedLong(PySequence_Fast_GET_ITEM(fast, i));

                if (PyErr_Occurred() || v >= PMUGATE_CPUS_MAX) {
                        PyErr_Clear();
                        PyErr_Format(PyExc_ValueError, "cpus must be CPU numbers from 0 to %u",
                                     PMUGATE_CPUS_MAX - 1);
                        free(cpus);
                        Py_DECREF(fast);
                        return -EINVAL;
                }
                cpus[i] = (uint32_t) v;
        }
        Py_DECREF(fast);
        *ret_cpus = cpus;
        *ret_n = (size_t) n;
        return 0;
}

static int set_periods(Measurement *self, double interval, double reset_period, double rotate_period) {
        pmugate_measure *m = self->measure;
        unsigned sets = pmugate_measure_event_sets(m);
        uint64_t reset_ns = (uint64_t) (reset_period * 1e9), rotate_ns = (uint64_t) (rotate_period * 1e9);
        uint64_t turn;

        if ((reset_ns > 0 && pmugate_measure_set_reset_period(m, reset_ns) < 0) ||
            (rotate_ns > 0 && pmugate_measure_set_rotate_period(m, rotate_ns) < 0)) {
                PyErr_SetString(PyExc_ValueError,
                                "reset_period and rotate_period must be from 0.001 to 60 s");
                return -EINVAL;
        }
        self->interval_ns = (uint64_t) (interval * 1e9);
        if (self->interval_ns == 0 || sets <= 1)
                return 0;
        /* with event sets taking turns, every set counts once in every interval, as with -I */
        turn = self->interval_ns / sets;
        if (turn < PMUGATE_PY_INTERVAL_MIN_NS || pmugate_measure_set_rotate_period(m, turn) < 0 ||
            (turn > pmugate_measure_poll_interval(m) && pmugate_measure_set_reset_period(m, turn) < 0)) {
                PyErr_Format(PyExc_ValueError,
                             "interval %.3f s is too short: %u event sets take turns on the counters and "
                             "each needs %.3f s of every interval", interval, sets,
                             PMUGATE_PY_INTERVAL_MIN_NS / 1e9);
                return -EINVAL;
        }
        return 0;
}

static int Measurement_init(Measurement *self, PyObject *args, PyObject *kwargs) {
        static char *kwlist[] = { "cpus", "group", "events", "flags", "socket", "interval", "reset_period",
                                  "rotate_period", NULL };
        const char *group = NULL, *events = NULL, *socket_path = NULL;
        char reason[PMUGATE_REASON_MAX] = "";
        double interval = 0, reset_period = 0, rotate_period = 0;
        pmugate_info *info = NULL;
        PyObject *cpu_seq;
        unsigned flags = 0;
        uint32_t *cpus = NULL;
        size_t n = 0;
        int r;

        if (self->connection) {
                PyErr_SetString(PyExc_RuntimeError, "a Measurement is opened once");
                return -1;
        }
        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|zzIzddd", kwlist, &cpu_seq, &group, &events,
                                         &flags, &socket_path, &interval, &reset_period, &rotate_period))
                return -1;
        if (!group && !events) {
                PyErr_SetString(PyExc_ValueError, "give a group, events or both");
                return -1;
        }
        if (interval < 0 || interval > 86400 ||
            (interval > 0 && interval * 1e9 < PMUGATE_PY_INTERVAL_MIN_NS)) {
                PyErr_Format(PyExc_ValueError, "interval must be at least %.3f s (or 0 for none)",
                             PMUGATE_PY_INTERVAL_MIN_NS / 1e9);
                return -1;
        }
        if (!self->locks_ready && (r = init_locks(self)) < 0) {
                errno = -r;
                PyErr_SetFromErrno(PyExc_OSError);
                return -1;
        }
        if (parse_cpus(cpu_seq, &cpus, &n) < 0)
                return -1;
        if (pyconnect(socket_path, &self->connection) < 0 || pyhello(self->connection, &info) < 0) {
                free(cpus);
                return -1;
        }
        pmugate_info_free(info);
        Py_BEGIN_ALLOW_THREADS
        r = pmugate_measure_open_group(self->connection, group, events, cpus, n, flags, &self->measure,
                                       reason, sizeof(reason));
        Py_END_ALLOW_THREADS
        free(cpus);
        if (r < 0) {
                pyerr_pmugate(r, self->connection, reason, "opening the measurement");
                return -1;
        }
        return set_periods(self, interval, reset_period, rotate_period) < 0 ? -1 : 0;
}

static int start_sampler(Measurement *self) {
        int r;

        self->stopping = false;
        r = pthread_create(&self->thread, NULL, sampler, self);
        if (r != 0)
                return -r;
        self->thread_running = true;
        return 0;
}

static void stop_sampler(Measurement *self) {
        if (!self->thread_running)
                return;
        pthread_mutex_lock(&self->lock);
        self->stopping = true;
        pthread_cond_signal(&self->wake);
        pthread_mutex_unlock(&self->lock);
        (void) pthread_join(self->thread, NULL);
        self->thread_running = false;
}

static PyObject *needs_open(Measurement *self) {
        if (!self->measure)
                PyErr_SetString(PyExc_RuntimeError, "the measurement is not open");
        return self->measure ? Py_None : NULL;
}

static PyObject *Measurement_start(Measurement *self, PyObject *unused) {
        int r;

        if (!needs_open(self))
                return NULL;
        if (self->started) {
                PyErr_SetString(PyExc_RuntimeError, "a measurement starts once");
                return NULL;
        }
        Py_BEGIN_ALLOW_THREADS
        r = pmugate_measure_start(self->measure);
        Py_END_ALLOW_THREADS
        if (r < 0)
                return pyerr_pmugate(r, self->connection, pmugate_measure_last_reason(self->measure),
                                     "starting the counters");
        self->started = true;
        r = start_sampler(self);
        if (r < 0) {
                Py_BEGIN_ALLOW_THREADS
                (void) pmugate_measure_stop(self->measure);
                Py_END_ALLOW_THREADS
                self->stopped = true;
                return pyerr_pmugate(r, NULL, "cannot start the sampling thread", "starting the counters");
        }
        Py_RETURN_NONE;
}

static PyObject *Measurement_stop(Measurement *self, PyObject *unused) {
        int r = 0, k = 0;

        if (!needs_open(self))
                return NULL;
        if (!self->started || self->stopped) {
                PyErr_SetString(PyExc_RuntimeError, self->stopped ? "the measurement stopped already" :
                                                                     "the measurement has not started");
                return NULL;
        }
        Py_BEGIN_ALLOW_THREADS
        stop_sampler(self);
        /* another Python thread may read the result meanwhile */
        pthread_mutex_lock(&self->lock);
        /* the last sample on its own: pmugate_measure_stop() goes on to release the lease, and
         * its reply would replace the daemon's reason for a lease it ended (revoked, preempted) */
        if (self->sample_error == 0) {
                k = pmugate_measure_sample(self->measure);
                if (k < 0)
                        note_sample_error(self, k);
                k = 0;
        }
        r = pmugate_measure_stop(self->measure);
        /* the last, partial interval */
        if (r >= 0 && self->interval_ns > 0 && self->sample_error == 0)
                k = keep_interval(self);
        pthread_mutex_unlock(&self->lock);
        Py_END_ALLOW_THREADS
        self->stopped = true;
        if (self->sample_error < 0) {
                PyObject *errors = PyImport_ImportModule("pmugate._errors"), *exc;

                if (!errors)
                        return NULL;
                exc = PyObject_CallMethod(errors, "from_errno", "isss", -self->sample_error,
                                          self->sample_name, self->sample_reason, "sampling the counters");
                Py_DECREF(errors);
                if (exc) {
                        PyErr_SetObject((PyObject *) Py_TYPE(exc), exc);
                        Py_DECREF(exc);
                }
                return NULL;
        }
        if (r < 0)
                return pyerr_pmugate(r, self->connection, pmugate_measure_last_reason(self->measure),
                                     "stopping the counters");
        if (k < 0)
                return pyerr_pmugate(k, NULL, NULL, "reading the last interval");
        Py_RETURN_NONE;
}

static PyObject *Measurement_result(Measurement *self, PyObject *unused) {
        pmugate_result *r = NULL;
        PyObject *d;
        int k;

        if (!needs_open(self))
                return NULL;
        if (!self->started) {
                PyErr_SetString(PyExc_RuntimeError, "the measurement has not started");
                return NULL;
        }
        /* the sampling thread or stop() in another Python thread may be using the measurement */
        pthread_mutex_lock(&self->lock);
        k = pmugate_measure_read(self->measure, PMUGATE_SPAN_TOTAL, &r);
        pthread_mutex_unlock(&self->lock);
        if (k < 0)
                return pyerr_pmugate(k, NULL, pmugate_measure_last_reason(self->measure),
                                     "reading the counts");
        d = pyresult_to_dict(r);
        pmugate_result_free(r);
        return d;
}

static PyObject *Measurement_intervals(Measurement *self, PyObject *unused) {
        PyObject *l;

        if (!needs_open(self))
                return NULL;
        pthread_mutex_lock(&self->lock);
        l = PyList_New((Py_ssize_t) self->n_intervals);
        for (size_t i = 0; l && i < self->n_intervals; i++) {
                PyObject *d = pyresult_to_dict(self->intervals[i]);

                if (!d) {
                        Py_CLEAR(l);
                        break;
                }
                PyList_SET_ITEM(l, (Py_ssize_t) i, d);
        }
        pthread_mutex_unlock(&self->lock);
        return l;
}

static PyObject *Measurement_describe(Measurement *self, PyObject *unused) {
        if (!needs_open(self))
                return NULL;
        pmugate_measure *m = self->measure;

        return Py_BuildValue("{s:s,s:s,s:s,s:I,s:d,s:s}", "model", pmugate_measure_model(m), "group",
                             pmugate_measure_group(m), "description", pmugate_measure_description(m),
                             "event_sets", pmugate_measure_event_sets(m), "poll_interval",
                             (double) pmugate_measure_poll_interval(m) / 1e9, "withheld",
                             self->started ? pmugate_measure_withheld(m) : "");
}

static void measurement_free(Measurement *self) {
        stop_sampler(self);
        self->measure = pmugate_measure_close(self->measure);
        self->connection = pmugate_disconnect(self->connection);
        for (size_t i = 0; i < self->n_intervals; i++)
                pmugate_result_free(self->intervals[i]);
        free(self->intervals);
        self->intervals = NULL;
        self->n_intervals = self->intervals_capacity = 0;
}

static PyObject *Measurement_close(Measurement *self, PyObject *unused) {
        Py_BEGIN_ALLOW_THREADS
        measurement_free(self);
        Py_END_ALLOW_THREADS
        Py_RETURN_NONE;
}

static void Measurement_dealloc(Measurement *self) {
        Py_BEGIN_ALLOW_THREADS
        measurement_free(self);
        Py_END_ALLOW_THREADS
        if (self->locks_ready) {
                (void) pthread_mutex_destroy(&self->lock);
                (void) pthread_cond_destroy(&self->wake);
        }
        Py_TYPE(self)->tp_free((PyObject *) self);
}

static PyMethodDef Measurement_methods[] = {
        { "start", (PyCFunction) Measurement_start, METH_NOARGS, "program and start the counters" },
        { "stop", (PyCFunction) Measurement_stop, METH_NOARGS,
          "take a last sample, restore the registers, release the lease" },
        { "result", (PyCFunction) Measurement_result, METH_NOARGS, "the result since start, as a dict" },
        { "intervals", (PyCFunction) Measurement_intervals, METH_NOARGS, "the interval results, as dicts" },
        { "describe", (PyCFunction) Measurement_describe, METH_NOARGS,
          "model, group, event sets, withheld" },
        { "close", (PyCFunction) Measurement_close, METH_NOARGS, "stop if needed and disconnect" },
        {}
};

PyTypeObject MeasurementType = {
        PyVarObject_HEAD_INIT(NULL, 0)
        .tp_name = "pmugate._pmugate.Measurement",
        .tp_doc = "Measurement(cpus, group=None, events=None, flags=0, socket=None, interval=0, "
                  "reset_period=0, rotate_period=0): one measurement on a connection of its own",
        .tp_basicsize = sizeof(Measurement),
        .tp_flags = Py_TPFLAGS_DEFAULT,
        .tp_new = PyType_GenericNew,
        .tp_init = (initproc) Measurement_init,
        .tp_dealloc = (destructor) Measurement_dealloc,
        .tp_methods = Measurement_methods,
};
