// The n8n CLI of a stack (runs to completion with main's environment) and the import step that
// uses it: credentials, then workflows, then the publications. Plain CommonJS, Node 20 compatible.
const fs = require('node:fs');
const path = require('node:path');
const { spawnService } = require('./childProcesses');
const n8nVersions = require('./n8nVersion');

/** `cli(args, { allowFailure })`: runs an n8n CLI command to completion (Node 24); resolves { code, stdout, stderr }. */
function cliRunner({ n8nBin, workDir, env, logFile }) {
	return (args, { allowFailure = false } = {}) =>
		new Promise((resolve, reject) => {
			const service = spawnService({ name: `n8n ${args[0]}`, command: n8nBin, args, cwd: workDir, env, logFile });
			service.exitPromise.then(({ code }) => {
				service.kill('SIGKILL'); // task runner children, if any are left
				const output = service.output();
				if (code !== 0 && !allowFailure) reject(new Error(`n8n ${args.join(' ')} failed (exit ${code}):\n${output.slice(-3000)}`));
				else resolve({ code, stdout: output, stderr: '' });
			});
		});
}

/** The workflows option read: each entry with its `json` (from `file` when not given). */
function readWorkflows(entries = []) {
	return entries.map((entry) => {
		const json = entry.json ?? JSON.parse(fs.readFileSync(entry.file, 'utf8'));
		return { ...entry, json };
	});
}

/**
 * Imports the credentials, then the workflows, then publishes those marked `publish`. One after
 * the other: the first CLI run migrates n8n's fresh database, and two at once race on it (n8n 1.x
 * fails with "column … already exists"); later runs find it migrated.
 */
async function importIntoN8n({ cli, workDir, credentials, workflows, n8nVersion, log }) {
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
	// Each CLI run boots n8n (several seconds): the publications run side by side.
	const activations = workflows
		.filter((entry) => entry.publish)
		.map((entry) => n8nVersions.activateWorkflowArgs(n8nVersion, entry.json))
		.filter(Boolean);
	log(`activating ${activations.length} workflow(s)…`);
	await Promise.all(activations.map((args) => cli(args)));
}

module.exports = { cliRunner, readWorkflows, importIntoN8n };
