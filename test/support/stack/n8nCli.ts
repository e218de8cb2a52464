// The n8n CLI of a stack (runs to completion with main's environment) and the import step that
// uses it: credentials, then workflows, then the publications (one statement in n8n's database). Node 20 compatible.
import fs from 'node:fs';
import path from 'node:path';
import { spawnService } from './childProcesses';
import { withClient } from './n8nDatabase';
import * as n8nVersions from './n8nVersion';

/** A credential as `n8n import:credentials` reads it. */
export interface CredentialEntry {
	id: string;
	name: string;
	type: string;
	data: Record<string, unknown>;
}

/** A workflow as n8n exports and imports it: its id and nodes, and whatever else n8n keeps. */
export interface WorkflowJson extends n8nVersions.WorkflowJson {
	[field: string]: unknown;
}

/** An entry of the workflows option: the workflow (`json`, or read from `file`) and whether to publish it. */
export interface WorkflowEntry {
	file?: string;
	json?: WorkflowJson;
	publish?: boolean;
}

/** A workflows entry after readWorkflows: its json is there. */
export type ReadWorkflow = WorkflowEntry & { json: WorkflowJson };

/** The end of a CLI run; the output of both streams is in `stdout`. */
export interface CliResult {
	code: number | null;
	stdout: string;
	stderr: string;
}

export type Cli = (args: string[], options?: { allowFailure?: boolean }) => Promise<CliResult>;

/** A CLI run that has not ended after this long never will (an import or a publication takes seconds). */
const CLI_TIMEOUT_MS = 300000;

/**
 * `cli(args, { allowFailure })`: runs an n8n CLI command to completion (Node 24); resolves { code,
 * stdout, stderr }. One still running after CLI_TIMEOUT_MS is killed and fails.
 */
export function cliRunner({
	n8nBin,
	workDir,
	env,
	logFile,
}: {
	n8nBin: string;
	workDir: string;
	env: NodeJS.ProcessEnv;
	logFile: string;
}): Cli {
	return (args, { allowFailure = false } = {}) =>
		new Promise((resolve, reject) => {
			const service = spawnService({ name: `n8n ${args[0]}`, command: n8nBin, args, cwd: workDir, env, logFile });
			let timedOut = false;
			const timer = setTimeout(() => {
				timedOut = true;
				service.kill('SIGKILL');
			}, CLI_TIMEOUT_MS);
			service.exitPromise.then(({ code }) => {
				clearTimeout(timer);
				service.kill('SIGKILL'); // task runner children, if any are left
				const output = service.output();
				if (timedOut) reject(new Error(`n8n ${args.join(' ')} did not end within ${CLI_TIMEOUT_MS / 1000} s:\n${output.slice(-3000)}`));
				else if (code !== 0 && !allowFailure) reject(new Error(`n8n ${args.join(' ')} failed (exit ${code}):\n${output.slice(-3000)}`));
				else resolve({ code, stdout: output, stderr: '' });
			});
		});
}

/** The workflows option read: each entry with its `json` (from `file` when not given). */
export function readWorkflows(entries: WorkflowEntry[] = []): ReadWorkflow[] {
	return entries.map((entry) => {
		const json = entry.json ?? (JSON.parse(fs.readFileSync(entry.file as string, 'utf8')) as WorkflowJson);
		return { ...entry, json };
	});
}

/**
 * Imports the credentials, then the workflows, then publishes those marked `publish`. One after
 * the other: the first CLI run migrates n8n's fresh database, and two at once race on it (n8n 1.x
 * fails with "column … already exists"); later runs find it migrated.
 */
export async function importIntoN8n({
	cli,
	workDir,
	credentials,
	workflows,
	n8nVersion,
	n8nDbUrl,
	log,
}: {
	cli: Cli;
	n8nDbUrl: string;
	workDir: string;
	credentials: CredentialEntry[];
	workflows: ReadWorkflow[];
	n8nVersion: string;
	log: (line: string) => void;
}): Promise<void> {
	const importDir = path.join(workDir, 'import');
	fs.rmSync(importDir, { recursive: true, force: true });
	fs.mkdirSync(path.join(importDir, 'workflows'), { recursive: true });
	if (credentials.length) {
		const file = path.join(importDir, 'credentials.json');
		fs.writeFileSync(file, JSON.stringify(credentials), { mode: 0o600 });
		log(`importing ${credentials.length} credential(s)…`);
		try {
			await cli(['import:credentials', `--input=${file}`]);
		} finally {
			fs.rmSync(file, { force: true }); // plain-text secrets do not stay on disk
		}
	}
	if (!workflows.length) return;
	for (const { json } of workflows) {
		fs.writeFileSync(path.join(importDir, 'workflows', `${json.id}.json`), JSON.stringify(json, null, '\t'));
	}
	log(`importing ${workflows.length} workflow(s)…`);
	await cli(['import:workflow', '--separate', `--input=${path.join(importDir, 'workflows')}`]);
	const live = workflows
		.filter((entry) => entry.publish && n8nVersions.activateWorkflowArgs(n8nVersion, entry.json))
		.map((entry) => entry.json.id);
	log(`activating ${live.length} workflow(s)…`);
	await activateWorkflows({ n8nDbUrl, n8nVersion, ids: live });
}

/**
 * Makes the imported workflows live as `publish:workflow` (2.x) or `update:workflow --active=true`
 * (1.x) would, in one statement (activateWorkflowsSql): each of those commands boots n8n for
 * seconds of CPU to run one UPDATE. Fails naming any workflow it could not make live.
 */
async function activateWorkflows({ n8nDbUrl, n8nVersion, ids }: { n8nDbUrl: string; n8nVersion: string; ids: string[] }): Promise<void> {
	if (!ids.length) return;
	const { rows } = await withClient(n8nDbUrl, (client) =>
		client.query<{ id: string }>(n8nVersions.activateWorkflowsSql(n8nVersion), [ids]),
	);
	const activated = new Set(rows.map((row) => row.id));
	const missed = ids.filter((id) => !activated.has(id));
	if (missed.length)
		throw new Error(`could not make these imported workflows live (not imported, or no saved version): ${missed.join(', ')}`);
}
