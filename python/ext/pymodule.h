/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The _pmugate extension: what its files share (errors, conversions, the Measurement type)
 */
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "pmugate/measure.h"
#include "pmugate/pmugate.h"

/* Sets the Python exception for a negative errno r from libpmugate: a pmugate.Error subclass
 * (pmugate/_errors.py picks it) carrying the daemon's code name and reason when the daemon
 * refused (c may be NULL), otherwise reason when not empty, otherwise the errno's text. what
 * says which step failed ("connecting", "starting the counters"). Returns NULL. */
PyObject *pyerr_pmugate(int r, pmugate *c, const char *reason, const char *what);

/* Connects to socket_path (NULL: $PMUGATE_SOCKET or the default); raises on failure. */
int pyconnect(const char *socket_path, pmugate **ret);

/* Asks the daemon for its info and sets LIBPFM_FORCE_PMU to its model, so that event names
 * resolve for the daemon's machine rather than the host's; raises on failure. */
int pyhello(pmugate *c, pmugate_info **ret);

/* A pmugate_result as a dict of lists (pmugate/_result.py builds the arrays). */
PyObject *pyresult_to_dict(const pmugate_result *r);

extern PyTypeObject MeasurementType;
