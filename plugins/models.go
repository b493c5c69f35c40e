package plugins

import (
	"cmp"

	"github.com/chatpipe/chatpipe/internal/chatmodel"
	"github.com/chatpipe/chatpipe/pipeline"
)

// chatModel resolves the model a plugin asks: the request's (side-by-side
// answers set cm.Model) or else the plugin's configured one, failing with
// the user's message when it is not configured.
func chatModel(cm *pipeline.ChatManage, configured string) (*chatmodel.Model, *pipeline.PluginError) {
	name := cmp.Or(cm.Model, configured)
	m, err := cm.Models.ChatModel(name)
	if err != nil {
		return nil, pipeline.Errorf(pipeline.CodeNotConfigured, err,
			"The chat model %q is not configured; check config.yaml.", name)
	}
	return m, nil
}
