// Lets a child process require the TypeScript sources directly (concurrency tests spawn real OS
// processes running the core), transpiling with the project's own TypeScript; no build needed.
const fs = require('node:fs');
const Module = require('node:module');
const ts = require('typescript');

require.extensions['.ts'] = (module, filename) => {
	const source = fs.readFileSync(filename, 'utf8');
	// A transform hooked in after this one (jest's, for a project's global setup and teardown) wraps
	// module._compile to compile the TypeScript itself: it gets the source, not this hook's output.
	if (module._compile !== Module.prototype._compile) {
		module._compile(source, filename);
		return;
	}
	const { outputText } = ts.transpileModule(source, {
		compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
		fileName: filename,
	});
	module._compile(outputText, filename);
};
