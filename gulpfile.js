// Copies the non-TypeScript assets the package ships into dist/: node icons and codex files,
// credential icons, workflow templates and the SQL files a DBA can read.
const { src, dest, parallel } = require('gulp');

function nodeAssets() {
	return src(['nodes/**/*.{png,svg,json}', 'credentials/**/*.{png,svg}'], { base: '.', encoding: false }).pipe(dest('dist'));
}

function templates() {
	return src('templates/**/*.json', { base: '.' }).pipe(dest('dist'));
}

function sql() {
	return src('sql/**/*.sql', { base: '.' }).pipe(dest('dist'));
}

exports['build:assets'] = parallel(nodeAssets, templates, sql);
