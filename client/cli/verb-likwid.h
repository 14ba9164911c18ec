/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate likwid: runs a LIKWID command with pmugate's access daemon in its place
 */
#pragma once

int verb_likwid(int argc, char *argv[], const char *socket_path);
