// Preloaded (NODE_OPTIONS=--require) into the `n8n worker` processes of the community-installer
// test only. n8n installs from a registry other than the public one only when licensed for it
// (`getNpmRegistry` in modules/community-packages/community-packages.service.js). The test turns that
// licence on where n8n's own end-to-end mode can: on main, through PATCH /rest/e2e/feature, which
// replaces License.isLicensed in main's memory. Workers serve no REST API, so the same switch is made
// here, for that one feature only, when n8n's License class loads. Everything else a worker does
// with the install broadcast (registry checks, `npm pack`, `npm install`, loading the nodes) is
// n8n's own code. With the public registry (what users have) n8n makes no licence check at all.
const Module = require('node:module');

const FEATURE = 'feat:communityNodes:customRegistry';
const load = Module._load;
Module._load = function loadWithRegistryLicence(request, parent, isMain) {
	const exported = load.apply(this, arguments);
	const License = exported && typeof exported === 'object' ? exported.License : undefined;
	if (typeof License === 'function' && typeof License.prototype.isLicensed === 'function' && typeof License.prototype.isCustomNpmRegistryEnabled === 'function' && !License.prototype.__customRegistryLicensed) {
		const isLicensed = License.prototype.isLicensed;
		License.prototype.isLicensed = function isLicensedOrCustomRegistry(feature) {
			return feature === FEATURE || isLicensed.call(this, feature);
		};
		License.prototype.__customRegistryLicensed = true;
	}
	return exported;
};
