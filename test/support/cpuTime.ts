/**
 * The CPU time `run` costs this process, in ms: how a test bounds a cost. CI runs n8n beside the unit tests, and a
 * loaded machine stretches the clock (a 167 ms call took over 2 s), not the CPU a call spends.
 */
export function cpuMs(run: () => unknown): number {
	const start = process.cpuUsage();
	run();
	const { user, system } = process.cpuUsage(start);
	return (user + system) / 1000;
}
