// Preloaded (NODE_OPTIONS=--require) into the `n8n worker` processes of the community-installer
// test only. n8n installs from a registry other than the public one only when licensed for it
// (`getNpmRegistry` in modules/community-packages/community-packages.service.js). The test turns that
// licence on where n8n's own end-to-end mode can: on main, through PATCH /rest/e2e/feature, which
// replaces License.isLicensed in main's memory. Workers serve no REST API, so the same switch is made
// here, for that one feature only, when n8n's License class loads. Everything else a worker does
// with the install broadcast (registry checks, `npm pack`, `npm install`, loading the nodes) is
// n8n's own code. With the public registry (what users have) n8n makes no licence check at all.
import Module from 'node:module';

/** The part of n8n's License class read and replaced here. */
interface LicensePrototype {
	isLicensed: (this: unknown, feature: string) => boolean;
	isCustomNpmRegistryEnabled?: unknown;
	__customRegistryLicensed?: boolean;
}

// Module._load is Node's internal loader, not in its typings: every require goes through it.
const loader = Module as unknown as { _load: (this: unknown, ...args: unknown[]) => unknown };

const FEATURE = 'feat:communityNodes:customRegistry';
const load = loader._load;
loader._load = function loadWithRegistryLicence(...args) {
	const exported = load.apply(this, args);
	const License = exported && typeof exported === 'object' ? (exported as { License?: unknown }).License : undefined;
	const prototype = typeof License === 'function' ? (License.prototype as LicensePrototype) : undefined;
	if (
		prototype &&
		typeof prototype.isLicensed === 'function' &&
		typeof prototype.isCustomNpmRegistryEnabled === 'function' &&
		!prototype.__customRegistryLicensed
	) {
		const isLicensed = prototype.isLicensed;
		prototype.isLicensed = function isLicensedOrCustomRegistry(feature) {
			return feature === FEATURE || isLicensed.call(this, feature);
		};
		prototype.__customRegistryLicensed = true;
	}
	return exported;
};
