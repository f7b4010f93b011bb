/** The architectures a catalog entry may name: schema.ts holds entries to them and `ls --arch` offers them. No zod here. */
export const ARCHS = ['volta', 'turing', 'ampere', 'ada', 'hopper', 'blackwell'] as const
