/**
 * The SITS release: `sits --version`, the chart's version and appVersion, the image tag the chart and the batch
 * workers use. package.json says the same (version.test.ts), and a release changes both.
 */
export const SITS_VERSION = '0.2.0';

/** The image of this release (the chart's default; `npm run image` builds it). */
export const SITS_IMAGE = `registry.sits2026.dev/sits/sits:${SITS_VERSION}`;
