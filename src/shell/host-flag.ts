import {Flags} from '@oclif/core'

/** --host-gpu of the commands that change one GPU by its index: lease hold, lease release, reset */
export const hostGpuFlag = {'host-gpu': Flags.integer({description: 'index of the host GPU', min: 0, default: 0})}

/** --host (or GPU_COSPLAY_HOST): the command runs on that box instead (BaseCommand.forwardToHost). */
const remoteHostFlag = (description: string) => ({host: Flags.string({description, env: 'GPU_COSPLAY_HOST', helpGroup: 'REMOTE'})})

/** every command that touches one GPU box */
export const hostFlag = remoteHostFlag('run on this GPU box over ssh: ssh://user@box[:port], user@box, an ~/.ssh/config alias or a hosts.yaml name')

/** ps and status: several boxes, one listing */
export const hostsFlag = remoteHostFlag('run on these GPU boxes over ssh, comma-separated: ssh://user@box[:port], an alias or a hosts.yaml name')

/** up: several boxes (or all of hosts.yaml): it plans on each and comes up where the plan is closest */
export const placeFlag = remoteHostFlag(
  'run on this GPU box over ssh (ssh://user@box[:port], an alias or a hosts.yaml name); several, comma-separated, or "all" (every hosts.yaml name): plan on each, come up on the one whose plan is closest to the target',
)
