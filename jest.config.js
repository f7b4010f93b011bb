// ESM + ts-jest: CommonJS jest cannot load execa 9 (design.md section 5).
const tsJest = ['ts-jest', {useESM: true, tsconfig: 'tsconfig.json', diagnostics: false}]
const common = {
  extensionsToTreatAsEsm: ['.ts'],
  transform: {'^.+\\.ts$': tsJest},
  moduleNameMapper: {'^(\\.{1,2}/.*)\\.js$': '$1'},
  testEnvironment: 'node',
}
export default {
  globalSetup: '<rootDir>/test/direct-python.mjs',
  projects: [
    {...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts']},
    {...common, displayName: 'cli', testMatch: ['<rootDir>/test/cli/**/*.test.ts']},
    {...common, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.test.ts']},
  ],
}
