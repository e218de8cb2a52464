// CPU profile of the n8n main process during chosen windows of load.
//
// The stack spawns `n8n start` through `#!/usr/bin/env node`, so a `node` wrapper first on PATH can
// add V8's --cpu-prof to that one process (not to the CLI imports or the task runner). The profile
// is written when n8n exits; its sample timestamps are CLOCK_MONOTONIC microseconds, the clock of
// process.hrtime, so windows recorded here select the samples of each workload.
import fs from 'node:fs';
import path from 'node:path';

/** Env overrides for startStack that make `n8n start` write a CPU profile into `dir`. */
export function profilingEnv({ nodeBin, workDir }: { nodeBin: string; workDir: string }): { env: Record<string, string>; dir: string } {
	const wrapperDir = path.join(workDir, 'profiling-bin');
	const dir = path.join(workDir, 'cpu-profiles');
	fs.mkdirSync(wrapperDir, { recursive: true });
	fs.mkdirSync(dir, { recursive: true });
	const realNode = path.join(nodeBin, 'node');
	const wrapper = `#!/bin/sh
# Profiles "n8n start" only; every other node process runs unchanged.
for arg in "$@"; do
  if [ "$arg" = start ]; then exec "${realNode}" --cpu-prof --cpu-prof-dir="${dir}" --cpu-prof-interval=250 "$@"; fi
done
exec "${realNode}" "$@"
`;
	fs.writeFileSync(path.join(wrapperDir, 'node'), wrapper, { mode: 0o755 });
	return {
		env: {
			PATH: `${wrapperDir}${path.delimiter}${nodeBin}${path.delimiter}${process.env.PATH}`,
		},
		dir,
	};
}

export const nowMicros = (): number => Number(process.hrtime.bigint() / 1000n);

/** A frame of V8's CPU profile (.cpuprofile). */
interface CallFrame {
	functionName: string;
	url: string;
	lineNumber: number;
}

/** The parts of a .cpuprofile file read here. */
interface CpuProfile {
	nodes: Array<{ id: number; callFrame: CallFrame; children?: number[] }>;
	startTime: number;
	samples: number[];
	timeDeltas: number[];
}

/** A workload's stretch of the profile, in process.hrtime microseconds. */
export interface ProfileWindow {
	name: string;
	start: number;
	end: number;
	executions: number;
}

/** One workload's CPU time (windows of the same name added up), in ms per execution. */
export interface ProfileSummary {
	name: string;
	executions: number;
	cpuMsPerExecution: number;
	categories: Array<{ name: string; msPerExecution: number }>;
	inclusive: Array<{ name: string; msPerExecution: number }>;
	functions: Array<{ name: string; msPerExecution: number; share: number }>;
}

// The package as n8n loaded it (the n8n cache folder is also named n8n-nodes-idempotency).
const isThisPackage = (frame: CallFrame) => (frame.url || '').includes('/node_modules/n8n-nodes-idempotency/');
const isN8nDatabase = (frame: CallFrame) => /typeorm|@n8n\/db/.test(frame.url || '');
/** Node's native writes to a socket (pg queries, HTTP answers): frames without a script. */
const isSocketWrite = (frame: CallFrame) => ['writev', 'writeBuffer', 'writeUtf8String'].includes(frame.functionName) && !frame.url;

function category(frame: CallFrame): string {
	const url = frame.url || '';
	const name = frame.functionName || '';
	if (name === '(garbage collector)') return 'garbage collector';
	if (name === '(idle)') return 'idle';
	if (name === '(program)' || name === '(root)') return 'V8/native (program)';
	if (isThisPackage(frame)) return 'this package';
	if (url.includes('@n8n/expression-runtime') || url.includes('isolated-vm') || url.includes('/luxon/'))
		return 'n8n expression runtime (isolated-vm, luxon)';
	if (/node_modules\/(pg|pg-protocol|pg-pool|pg-types|pg-promise|postgres-[a-z]+)\//.test(url))
		return 'pg driver (both Postgres nodes and ours)';
	if (url.includes('n8n-workflow')) return 'n8n-workflow (expressions, data proxy)';
	if (url.includes('n8n-core')) return 'n8n-core (execution engine)';
	if (isN8nDatabase(frame)) return "typeorm / @n8n/db (n8n's own database)";
	if (url.includes('n8n-nodes-base')) return 'n8n-nodes-base (stock nodes)';
	if (url.includes('/n8n/dist') || url.includes('@n8n/')) return 'n8n server (webhooks, hooks, saving)';
	if (url.startsWith('node:') || url === '') return 'Node.js internals';
	return 'other libraries (express, …)';
}

/**
 * Self time per category and per function inside the windows, in ms per execution; windows with
 * the same name (interleaved rounds of one workload) are added up.
 * windows: [{ name, start, end, executions }] in process.hrtime microseconds.
 */
/**
 * Call paths whose total time (the frame and everything it calls, while on the stack) is counted
 * per window: what a node's calls into n8n cost, not only the self time of its own lines. Time
 * after an await counts under the function that resumed, so these are lower bounds.
 */
const INCLUSIVE: Array<[string, (frame: CallFrame) => boolean]> = [
	['this package, with what it calls (n8n, pg)', isThisPackage],
	[
		'getCredentials (n8n: credential lookup and decryption)',
		(f) => f.functionName === 'getCredentials' || f.functionName === '_getCredentials',
	],
	['getNodeParameter (n8n)', (f) => f.functionName === 'getNodeParameter' || f.functionName === '_getNodeParameter'],
	['custom data setAll (n8n)', (f) => f.functionName === 'setAll'],
	['pg Pool connect (checkout)', (f) => f.functionName === 'connect' && /pg-pool/.test(f.url || '')],
	[
		'expression isolate: built, loaded, disposed (n8n)',
		(f) =>
			(f.url || '').includes('isolated-vm-bridge') &&
			['IsolatedVmBridge', 'initialize', 'loadVendorLibraries', 'dispose', 'injectErrorHandler'].includes(f.functionName),
	],
	['expressions evaluated in the isolate (n8n)', (f) => (f.url || '').includes('isolated-vm-bridge') && f.functionName === 'execute'],
	["n8n's own database (typeorm), with what it calls", isN8nDatabase],
	['socket writes (writev, writeBuffer, writeUtf8String)', isSocketWrite],
];

/** Call paths counted only where two frames share a stack: the first names who, the second what. */
const INCLUSIVE_WITHIN: Array<[string, (frame: CallFrame) => boolean, (frame: CallFrame) => boolean]> = [
	["socket writes for n8n's own database", isN8nDatabase, isSocketWrite],
	['socket writes for this package', isThisPackage, isSocketWrite],
	['socket writes for HTTP answers', (f) => (f.url || '').includes('_http_outgoing'), isSocketWrite],
];

export function summarise(profileFile: string, windows: ProfileWindow[], { top = 12 } = {}): ProfileSummary[] {
	const profile = JSON.parse(fs.readFileSync(profileFile, 'utf8')) as CpuProfile;
	const byId = new Map(profile.nodes.map((node) => [node.id, node]));
	const frameOf = (id: number): CallFrame => {
		const node = byId.get(id);
		if (!node) throw new Error(`${profileFile}: no node ${id}`);
		return node.callFrame;
	};
	const parent = new Map<number, number>();
	for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
	// Per profile node: the INCLUSIVE labels found on its stack (computed once per node id).
	const pathsOf = new Map<number, string[]>();
	const inclusivePaths = (id: number) => {
		let found = pathsOf.get(id);
		if (found) return found;
		const labels = new Set<string>();
		const stack: CallFrame[] = [];
		for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
			const frame = frameOf(at);
			stack.push(frame);
			for (const [label, test] of INCLUSIVE) if (test(frame)) labels.add(label);
		}
		for (const [label, who, what] of INCLUSIVE_WITHIN) if (stack.some(who) && stack.some(what)) labels.add(label);
		found = [...labels];
		pathsOf.set(id, found);
		return found;
	};
	const byName = new Map<
		string,
		{
			name: string;
			executions: number;
			categories: Map<string, number>;
			functions: Map<string, number>;
			inclusive: Map<string, number>;
			samplesMs: number;
		}
	>();
	for (const w of windows) {
		const entry = byName.get(w.name) ?? {
			name: w.name,
			executions: 0,
			categories: new Map<string, number>(),
			functions: new Map<string, number>(),
			inclusive: new Map<string, number>(),
			samplesMs: 0,
		};
		entry.executions += w.executions;
		byName.set(w.name, entry);
	}
	const result = [...byName.values()];
	let t = profile.startTime;
	for (let i = 0; i < profile.samples.length; i++) {
		t += profile.timeDeltas[i];
		const weightMs = (profile.timeDeltas[i + 1] ?? 0) / 1000;
		const inWindow = windows.find((x) => t >= x.start && t < x.end);
		if (!inWindow) continue;
		const w = byName.get(inWindow.name);
		if (!w) continue;
		const frame = frameOf(profile.samples[i]);
		const cat = category(frame);
		if (cat === 'idle') continue;
		w.samplesMs += weightMs;
		w.categories.set(cat, (w.categories.get(cat) ?? 0) + weightMs);
		const where = frame.url ? `${frame.url.replace(/^.*node_modules\//, '').replace(/^file:\/\//, '')}:${frame.lineNumber + 1}` : '';
		const fn = `${frame.functionName || '(anonymous)'} ${where}`.trim();
		w.functions.set(fn, (w.functions.get(fn) ?? 0) + weightMs);
		for (const label of inclusivePaths(profile.samples[i])) w.inclusive.set(label, (w.inclusive.get(label) ?? 0) + weightMs);
	}
	return result.map((w) => ({
		name: w.name,
		executions: w.executions,
		cpuMsPerExecution: w.samplesMs / w.executions,
		categories: [...w.categories.entries()].sort((a, b) => b[1] - a[1]).map(([name, ms]) => ({ name, msPerExecution: ms / w.executions })),
		inclusive: [...INCLUSIVE, ...INCLUSIVE_WITHIN].map(([name]) => ({ name, msPerExecution: (w.inclusive.get(name) ?? 0) / w.executions })),
		functions: [...w.functions.entries()]
			.sort((a, b) => b[1] - a[1])
			.slice(0, top)
			.map(([name, ms]) => ({
				name,
				msPerExecution: ms / w.executions,
				share: ms / w.samplesMs,
			})),
	}));
}
