// Lets a child process require the TypeScript sources directly (concurrency tests spawn real OS
// processes running the core), transpiling with the project's own TypeScript; no build needed.
// Each file's output is kept on disk by the hash of its source: the races start many of these
// processes, and transpiling their imports again cost each one about a second of CPU.
const crypto = require('node:crypto');
const fs = require('node:fs');
const Module = require('node:module');
const path = require('node:path');

// What the output depends on besides the source: TypeScript's version (its package.json, so that a
// cached file needs no compiler loaded) and the options below.
const OUTPUT_VERSION = `${require('typescript/package.json').version} CommonJS ES2022 esModuleInterop`;
const cacheDir = path.join(__dirname, '..', '..', 'node_modules', '.cache', 'register-ts');
let ts;

/** The CommonJS output for one TypeScript file: from the cache when its source was seen before. */
function transpiled(source, filename) {
	const hash = crypto.createHash('sha256').update(OUTPUT_VERSION).update('\0').update(source).digest('hex');
	const cached = path.join(cacheDir, `${hash}.js`);
	try {
		return fs.readFileSync(cached, 'utf8');
	} catch {
		// not cached yet
	}
	ts ??= require('typescript');
	const { outputText } = ts.transpileModule(source, {
		compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
		fileName: filename,
	});
	try {
		fs.mkdirSync(cacheDir, { recursive: true });
		// Written aside, then renamed: a process reading it at the same time sees all of it or none.
		const partial = `${cached}.${process.pid}.tmp`;
		fs.writeFileSync(partial, outputText);
		fs.renameSync(partial, cached);
	} catch {
		// a read-only checkout: transpile again next time
	}
	return outputText;
}

require.extensions['.ts'] = (module, filename) => {
	const source = fs.readFileSync(filename, 'utf8');
	// A transform hooked in after this one (jest's, for a project's global setup and teardown) wraps
	// module._compile to compile the TypeScript itself: it gets the source, not this hook's output.
	if (module._compile !== Module.prototype._compile) {
		module._compile(source, filename);
		return;
	}
	module._compile(transpiled(source, filename), filename);
};
