/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate list groups: the groups a model can run, from every group directory
 */
#pragma once

int verb_list(int argc, char *argv[], const char *socket_path);
