/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * likwid-style: a program instrumented for LIKWID's marker API, as LIKWID's documentation
 * shows it, left unchanged; built against pmugate's likwid-marker.h
 */
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>
#include <likwid-marker.h>

#define N 100000

int main(int argc, char* argv[])
{
    int i, rounds = argc > 1 ? atoi(argv[1]) : 3;
    double *a = malloc(N * sizeof(double)), sum = 0.0;
    LIKWID_MARKER_INIT;
#pragma omp parallel
{
    LIKWID_MARKER_THREADINIT;
    LIKWID_MARKER_REGISTER("Total");
    LIKWID_MARKER_REGISTER("init");
}
    for (int r = 0; r < rounds; r++) {
#pragma omp parallel
{
        LIKWID_MARKER_START("Total");
        LIKWID_MARKER_START("init");
#pragma omp for
        for (i = 0; i < N; i++)
            a[i] = i * 0.5;
        LIKWID_MARKER_STOP("init");
#pragma omp for reduction(+:sum)
        for (i = 0; i < N; i++)
            sum += a[i];
        LIKWID_MARKER_STOP("Total");
}
    }
    int nevents = 20, count = 0;
    double events[20], time = 0.0;
    LIKWID_MARKER_GET("Total", &nevents, events, &time, &count);
    printf("sum %.1f, Total on the master thread: %d calls, %d events\n", sum, count, nevents);
    LIKWID_MARKER_CLOSE;
    free(a);
    return 0;
}
