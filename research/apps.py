from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured


class ResearchConfig(AppConfig):
    name = "research"
    verbose_name = "Research"

    def ready(self) -> None:
        # Check the research configuration at start-up, so a wrong variable stops
        # the server and the workers with one sentence instead of failing a run later.
        from config.env import ConfigError
        from research.llm.config import LLMConfigError
        from research.llm.factory import llm_config_from_settings
        from research.sources.config import sources_config_from_settings
        from research.sources.documents.limits import document_limits_from_settings

        try:
            sources_config_from_settings()
            document_limits_from_settings()
            llm = llm_config_from_settings()
            if llm.model_configured:
                llm.validate()
        except (ImproperlyConfigured, LLMConfigError) as exc:
            raise ConfigError(str(exc)) from None
        from research import telemetry

        telemetry.configure_from_settings()
