/* SPDX-License-Identifier: MIT */
/*
 * Test shim, loaded with LD_PRELOAD: ibv_open_device blocks for ever, as it
 * did on Azure A8/A9 VMs.  The agent must kill the probe and go on.
 */
#include <unistd.h>

struct ibv_device;
struct ibv_context;

struct ibv_context *ibv_open_device(struct ibv_device *device);

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	(void)device;
	for (;;)
		pause();
}
