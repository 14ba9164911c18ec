/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * LIKWID's marker macros on pmugate's marker API: a program instrumented for LIKWID
 * (#include <likwid-marker.h>, compiled with -DLIKWID_PERFMON) builds unchanged against
 * libpmugate and is measured with `pmugate stat -m`. Without LIKWID_PERFMON every macro is
 * empty, as in LIKWID. Regions may nest, as LIKWID allows.
 *
 * LIKWID_MARKER_SWITCH does nothing: markers read one set of counters, so pmugate refuses
 * groups that would take turns. LIKWID_MARKER_GET gives the raw counter values in the order
 * pmugate reads them. The GPU (NVMON, ROCMON) macros are empty.
 */
#ifndef LIKWID_MARKER_H
#define LIKWID_MARKER_H

#ifdef LIKWID_PERFMON
#include <pmugate/marker.h>

static inline void likwid_markerInit(void) {
        (void) pmugate_marker_init(PMUGATE_MARKER_NESTING);
}
static inline void likwid_markerThreadInit(void) {
        (void) pmugate_marker_thread_init();
}
static inline void likwid_markerNextGroup(void) {
}
static inline void likwid_markerClose(void) {
        (void) pmugate_marker_close();
}
static inline int likwid_markerRegisterRegion(const char *regionTag) {
        return pmugate_marker_register(regionTag, 0);
}
static inline int likwid_markerStartRegion(const char *regionTag) {
        return pmugate_marker_start(regionTag);
}
static inline int likwid_markerStopRegion(const char *regionTag) {
        return pmugate_marker_stop(regionTag);
}
static inline int likwid_markerResetRegion(const char *regionTag) {
        return pmugate_marker_reset(regionTag);
}
static inline void likwid_markerGetRegion(const char *regionTag, int *nr_events, double *events,
                                          double *time, int *count) {
        if (pmugate_marker_get(regionTag, nr_events, events, time, count) < 0 && nr_events)
                *nr_events = 0;
}

#define LIKWID_MARKER_INIT likwid_markerInit()
#define LIKWID_MARKER_THREADINIT likwid_markerThreadInit()
#define LIKWID_MARKER_SWITCH likwid_markerNextGroup()
#define LIKWID_MARKER_REGISTER(regionTag) likwid_markerRegisterRegion(regionTag)
#define LIKWID_MARKER_START(regionTag) likwid_markerStartRegion(regionTag)
#define LIKWID_MARKER_STOP(regionTag) likwid_markerStopRegion(regionTag)
#define LIKWID_MARKER_CLOSE likwid_markerClose()
#define LIKWID_MARKER_RESET(regionTag) likwid_markerResetRegion(regionTag)
#define LIKWID_MARKER_GET(regionTag, nevents, events, time, count) \
        likwid_markerGetRegion(regionTag, nevents, events, time, count)
#else /* LIKWID_PERFMON */
#define LIKWID_MARKER_INIT
#define LIKWID_MARKER_THREADINIT
#define LIKWID_MARKER_SWITCH
#define LIKWID_MARKER_REGISTER(regionTag)
#define LIKWID_MARKER_START(regionTag)
#define LIKWID_MARKER_STOP(regionTag)
#define LIKWID_MARKER_CLOSE
#define LIKWID_MARKER_GET(regionTag, nevents, events, time, count)
#define LIKWID_MARKER_RESET(regionTag)
#endif /* LIKWID_PERFMON */

/* GPU markers: pmugate measures CPUs only. */
#define LIKWID_NVMARKER_INIT
#define LIKWID_NVMARKER_THREADINIT
#define LIKWID_NVMARKER_SWITCH
#define LIKWID_NVMARKER_REGISTER(regionTag)
#define LIKWID_NVMARKER_START(regionTag)
#define LIKWID_NVMARKER_STOP(regionTag)
#define LIKWID_NVMARKER_CLOSE
#define LIKWID_NVMARKER_GET(regionTag, ngpu, nevents, events, time, count)
#define LIKWID_NVMARKER_RESET(regionTag)
#define LIKWID_ROCMARKER_INIT
#define LIKWID_ROCMARKER_THREADINIT
#define LIKWID_ROCMARKER_SWITCH
#define LIKWID_ROCMARKER_REGISTER(regionTag)
#define LIKWID_ROCMARKER_START(regionTag)
#define LIKWID_ROCMARKER_STOP(regionTag)
#define LIKWID_ROCMARKER_CLOSE
#define LIKWID_ROCMARKER_GET(regionTag, ngpu, nevents, events, time, count)
#define LIKWID_ROCMARKER_RESET(regionTag)

#endif /* LIKWID_MARKER_H */
