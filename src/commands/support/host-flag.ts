import {Flags} from '@oclif/core'

/** --host on every command that touches a GPU: it then runs on that box (BaseCommand.forwardToHost). */
export const hostFlag = {
  host: Flags.string({
    description: 'run on this GPU box over ssh: ssh://user@box[:port], user@box, an ~/.ssh/config alias or a hosts.yaml name',
    env: 'GPU_COSPLAY_HOST',
    helpGroup: 'REMOTE',
  }),
}

/** ps and status: several boxes, one listing */
export const hostsFlag = {
  host: Flags.string({
    description: 'run on these GPU boxes over ssh, comma-separated: ssh://user@box[:port], an alias or a hosts.yaml name',
    env: 'GPU_COSPLAY_HOST',
    helpGroup: 'REMOTE',
  }),
}

/** up: several boxes (or all of hosts.yaml): it plans on each and comes up where the plan is closest */
export const placeFlag = {
  host: Flags.string({
    description:
      'run on this GPU box over ssh (ssh://user@box[:port], an alias or a hosts.yaml name); several, comma-separated, or "all" (every hosts.yaml name): plan on each, come up on the one whose plan is closest to the target',
    env: 'GPU_COSPLAY_HOST',
    helpGroup: 'REMOTE',
  }),
}
