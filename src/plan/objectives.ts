export const OBJECTIVES = ['balanced', 'fp32', 'bf16', 'bandwidth'] as const
export type Objective = (typeof OBJECTIVES)[number]
