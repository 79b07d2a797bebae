/**
 * The structure the code keeps (docs/architecture.md, "Rules the build checks"). Type-only imports count:
 * a circle through types is still a circle for a reader and for the order of change.
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'No import circles, type imports included.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'module-face',
      severity: 'error',
      comment: "A module is reached through its face, src/modules/<name>/index.ts: never through another module's files.",
      from: { path: '^src/modules/([^/]+)/' },
      to: { path: '^src/modules/([^/]+)/.+', pathNot: ['^src/modules/$1/', '^src/modules/[^/]+/index\\.ts$'] },
    },
    {
      name: 'module-face-from-outside',
      severity: 'error',
      comment: "Code outside src/modules reaches a module through its face, src/modules/<name>/index.ts.",
      from: { path: '^(src|activities|workflows)/', pathNot: '^src/modules/' },
      to: { path: '^src/modules/[^/]+/.+', pathNot: '^src/modules/[^/]+/index\\.ts$' },
    },
    {
      name: 'workflows-below-modules',
      severity: 'error',
      comment: 'Modules start and signal workflows through src/temporal: they never import workflow code.',
      from: { path: '^src/modules/' },
      to: { path: '^workflows/.+\\.workflow\\.ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist|coverage|test)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.json'] },
  },
};
