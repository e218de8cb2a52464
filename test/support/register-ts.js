// Lets a child process require the TypeScript sources directly (concurrency tests spawn real OS
// processes running the core), transpiling with the project's own TypeScript; no build needed.
const fs = require('node:fs');
const ts = require('typescript');

require.extensions['.ts'] = (module, filename) => {
	const source = fs.readFileSync(filename, 'utf8');
	const { outputText } = ts.transpileModule(source, {
		compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
		fileName: filename,
	});
	module._compile(outputText, filename);
};
